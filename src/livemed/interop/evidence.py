"""Evidence passages for the `offline/retrieval` baseline, from a JSONL (or .jsonl.gz) corpus.

Each line is an object with the passage in `text`, `snippet` or `answer` (MedQuAD's field). Long
texts are cut into windows of about `window` words; identical passages are kept once.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, cast

from livemed.errors import InputFileError

TEXT_FIELDS = ("text", "snippet", "answer")


def _open(path: Path) -> IO[bytes]:
    try:
        return cast(IO[bytes], gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb"))
    except OSError as exc:
        raise InputFileError(path, f"cannot open: {exc.strerror}") from None


def windows(text: str, size: int) -> list[str]:
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def load_passages(path: Path, *, window: int = 80, limit: int | None = None) -> list[str]:
    """Passages from a corpus file; a line without a text field is an error naming file:line."""
    seen: set[str] = set()
    passages: list[str] = []
    with _open(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputFileError(path, f"invalid JSON: {exc.msg}", number) from None
            text = next((data[f] for f in TEXT_FIELDS if isinstance(data, dict) and data.get(f)), None)
            if not isinstance(text, str):
                raise InputFileError(path, f"no {'/'.join(TEXT_FIELDS)} field", number)
            for passage in windows(text, window):
                if passage not in seen:
                    seen.add(passage)
                    passages.append(passage)
            if limit is not None and len(passages) >= limit:
                break
    return passages
