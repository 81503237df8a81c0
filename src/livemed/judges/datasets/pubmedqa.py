"""PubMedQA PQA-L (`ori_pqal.json`): yes/no/maybe items over an abstract without its conclusion."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.judges.datasets.items import ChoiceItem

LABELS = ("yes", "no", "maybe")
OPTIONS = {label: label for label in LABELS}


def main_file(path: Path) -> Path:
    return path / "ori_pqal.json" if path.is_dir() else path


def _contexts(value: Any) -> list[str]:
    if isinstance(value, str):  # some copies keep the list as its Python repr
        value = ast.literal_eval(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("CONTEXTS must be a list of strings")
    return value


def _item(pmid: str, data: Any) -> ChoiceItem:
    if not isinstance(data, dict):
        raise ValueError("expected an object")
    for key in ("QUESTION", "CONTEXTS", "final_decision"):
        if key not in data:
            raise ValueError(f"missing field {key!r}")
    label = str(data["final_decision"]).strip().lower()
    if label not in LABELS:
        raise ValueError(f"final_decision must be yes, no or maybe, got {data['final_decision']!r}")
    return ChoiceItem(
        dataset="pubmedqa",
        item_id=str(pmid),
        question=str(data["QUESTION"]),
        options=dict(OPTIONS),
        answer=label,
        context="\n".join(_contexts(data["CONTEXTS"])),
        group=label,
    )


def load(path: Path) -> Iterator[ChoiceItem | InputFileError]:
    """Every labelled item; a bad item is an error naming the file and its PMID, the rest load."""
    file = main_file(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(file, f"cannot open: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFileError(file, f"not a PubMedQA JSON file: {exc}") from None
    if not isinstance(data, dict):
        raise InputFileError(file, "expected a JSON object keyed by PMID")
    for pmid, entry in data.items():
        try:
            yield _item(pmid, entry)
        except (ValueError, SyntaxError) as exc:
            yield InputFileError(file, f"item {pmid}: {exc}")
