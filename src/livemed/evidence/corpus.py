"""Evidence corpora: passages read from JSONL (`id, title, text, url, licence`) or from MedQuAD."""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from livemed.common.text import sentence_spans
from livemed.config import describe_validation_error
from livemed.errors import InputFileError
from livemed.records import short_hash

MEDQUAD_LICENCE = "CC BY 4.0"
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

    __slots__ = ("_joined", "_starts", "spans", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans = sentence_spans(text)  # (start, end) of each sentence in `text`
        last_start, last_end = self.spans[-1]
        if not text[last_start:last_end].strip():  # every other piece ends with its . ! or ?
            self.spans.pop()
        lowered = text.lower()
        if len(lowered) == len(text):
            # each character lower-cased to one: the sentences' places in `text` hold in `lowered`, and
            # around each is whitespace (not a word character: no word spans two sentences)
            self._joined = lowered
            self._starts = [start for start, _ in self.spans]
        else:  # a character lower-cased to two (İ): the lower-case sentences joined by "\n"
            parts = [sentence.lower() for sentence in self.sentences]
            self._joined = "\n".join(parts)
            self._starts = []
            at = 0
            for part in parts:
                self._starts.append(at)
                at += len(part) + 1

    @property
    def sentences(self) -> list[str]:
        return [self.text[start:end] for start, end in self.spans]

    def snippet(self, query: str, *, max_chars: int = 400) -> str:
        """`snippet(text, query)`."""
        return self.snippet_of(tokens(query), max_chars=max_chars)

    def snippet_of(self, wanted: set[str], *, max_chars: int = 400) -> str:
        """The snippet for a query whose `tokens` are `wanted`. A window's words are its sentences'
        words (a word never spans a space), and a sentence has a query word when the word stands in it
        between non-word characters (a maximal run of `[a-z0-9]`, as `tokens` finds it): the sentence
        is not tokenised. Each word is looked for in the whole lower-case passage (`str.find`, jumping
        to the next sentence once a sentence has it); which sentences hold it is one bit per word in
        each sentence's mask."""
        spans, text = self.spans, self.text
        if not spans:
            return text[:max_chars]
        joined, starts = self._joined, self._starts
        count = len(starts)
        masks = [0] * (count + 1)
        bit = 1
        for word in wanted:
            at = joined.find(word)
            while at != -1:
                end = at + len(word)
                if (at == 0 or joined[at - 1] not in _WORD_CHARS) and (
                    end == len(joined) or joined[end] not in _WORD_CHARS
                ):
                    sentence = bisect_right(starts, at) - 1
                    masks[sentence] |= bit
                    if sentence + 1 == count:
                        break
                    at = joined.find(word, starts[sentence + 1])  # the next sentence on
                else:
                    at = joined.find(word, at + 1)
            bit <<= 1
        best = 0
        if bit > 1:
            overlaps = [(masks[i] | masks[i + 1]).bit_count() for i in range(count)]
            best = overlaps.index(max(overlaps))  # the first window with the most query words
        start, end = spans[best]
        window = text[start:end]
        if best + 1 < count:
            start, end = spans[best + 1]
            window = f"{window} {text[start:end]}"
        return window if len(window) <= max_chars else window[: max_chars - 1].rstrip() + "…"


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
