"""Evidence corpora: passages read from JSONL (`id, title, text, url, licence`) or from MedQuAD."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from livemed.config import describe_validation_error
from livemed.errors import InputFileError
from livemed.records import short_hash

MEDQUAD_LICENCE = "CC BY 4.0"
_SENTENCE_END = re.compile(r"[.!?](\s+)")  # the whitespace after ., ! or ?: where a sentence ends
_TOKEN = re.compile(r"[a-z0-9]{3,}")


class Passage(BaseModel):
    """One evidence passage."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    title: str = ""
    text: str = Field(min_length=1)
    url: str | None = None
    licence: str | None = None


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = _open(path)
    except FileNotFoundError:
        raise InputFileError(path, "evidence corpus not found") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFileError(path, f"invalid JSON: {exc.msg}", number) from None
            if not isinstance(data, dict):
                raise InputFileError(path, "each line must be a JSON object", number)
            yield number, data


def load_corpus(path: str | Path) -> list[Passage]:
    """Passages from a JSONL (or .jsonl.gz) file with fields id, title, text, url, licence."""
    path = Path(path)
    passages = []
    for number, data in _lines(path):
        try:
            passages.append(Passage.model_validate(data))
        except ValidationError as exc:
            raise InputFileError(path, describe_validation_error(exc), number) from None
    return passages


def load_medquad(path: str | Path) -> list[Passage]:
    """MedQuAD answered pairs (`qid, focus, question, answer, url, …`), one passage per distinct answer.

    Passage ids are `medquad:<collection>/<file>#<qid>` (see `medquad_id`), unique over the file.
    """
    path = Path(path)
    passages: list[Passage] = []
    seen: set[str] = set()
    keys: Counter[str] = Counter()
    for number, data in _lines(path):
        answer = str(data.get("answer") or "").strip()
        qid = data.get("qid")
        if not qid:
            raise InputFileError(path, "a MedQuAD line needs 'qid'", number)
        key = medquad_key(data)
        keys[key] += 1
        if not answer or answer in seen:
            continue
        seen.add(answer)
        title = " — ".join(str(part) for part in (data.get("focus"), data.get("question")) if part)
        passages.append(
            Passage(
                id=medquad_id(key, keys[key]),
                title=title,
                text=answer,
                url=data.get("url"),
                licence=MEDQUAD_LICENCE,
            )
        )
    return passages


def medquad_key(pair: dict[str, Any]) -> str:
    """`<collection>/<file>#<qid>`: where a pair comes from upstream.

    Question ids repeat across collections (`0000001-1` is in several) and across the files of one
    page (CancerGov's `0000013_2_1.xml` … `_6.xml` share their question ids). `file` is the XML file's
    name (written by `livemed evidence fetch medquad` since conversion format 2); a line converted
    before that has the page's `doc_id` instead, else the qid's page part.
    """
    qid = str(pair.get("qid"))
    file = pair.get("file") or pair.get("doc_id") or qid.rsplit("-", 1)[0]
    return f"{pair.get('collection') or ''}/{file}#{qid}"


def medquad_id(key: str, ordinal: int) -> str:
    """The passage id of the `ordinal`-th pair (1-based, in file order) with this key: `~2`, `~3`, …
    are added only to repeats, so ids stay the same from run to run for the same file."""
    return f"medquad:{key}" if ordinal == 1 else f"medquad:{key}~{ordinal}"


def corpus_hash(passages: list[Passage]) -> str:
    """A digest of the corpus content: the key of its on-disk index."""
    return short_hash(*(f"{p.id}\x1e{p.title}\x1e{p.text}" for p in passages))


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def snippet(text: str, query: str, *, max_chars: int = 400) -> str:
    """The one or two consecutive sentences of `text` that share the most words with `query`."""
    return Sentences(text).snippet(query, max_chars=max_chars)


class Sentences:
    """A passage split into sentences once, for the snippets of many queries."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sentences = [s for s in _split_sentences(text) if s.strip()]
        self.lowered = [s.lower() for s in self.sentences]

    def snippet(self, query: str, *, max_chars: int = 400) -> str:
        """`snippet(text, query)`. A window's words are its sentences' words (a word never spans a
        space), and a sentence has a query word when the word stands in it between non-word characters
        (a maximal run of `[a-z0-9]`, as `tokens` finds it): the sentence is not tokenised."""
        if not self.sentences:
            return self.text[:max_chars]
        wanted = tokens(query)
        shared = [{w for w in wanted if w in lowered and _has_word(lowered, w)} for lowered in self.lowered]
        shared.append(set())
        best, best_overlap = 0, -1
        for i in range(len(self.sentences)):
            overlap = len(shared[i] | shared[i + 1])
            if overlap > best_overlap:
                best, best_overlap = i, overlap
        window = " ".join(self.sentences[best : best + 2])
        return window if len(window) <= max_chars else window[: max_chars - 1].rstrip() + "…"


def _split_sentences(text: str) -> list[str]:
    r"""`re.split(r"(?<=[.!?])\s+", text)`, without a look-behind at every character (twice as fast)."""
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        pieces.append(text[start : end.start(1)])
        start = end.end(1)
    pieces.append(text[start:])
    return pieces


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _has_word(text: str, word: str) -> bool:
    """Whether `word` is one of `tokens(text)` (text already lower-case)."""
    start = text.find(word)
    while start != -1:
        end = start + len(word)
        if (start == 0 or text[start - 1] not in _WORD_CHARS) and (
            end == len(text) or text[end] not in _WORD_CHARS
        ):
            return True
        start = text.find(word, start + 1)
    return False
