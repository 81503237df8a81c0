"""The default retriever: BM25 (bm25s) over a passage corpus, with the index persisted on disk.

The index lives in `<cache_dir>/bm25-<corpus hash>/`; a changed corpus gets a new folder, an
unchanged one is loaded instead of re-indexed. `search_batch` / `search_many` answer many queries
at once: one bm25s tokenisation, bm25s's own scores of each query (`BM25.get_scores`, what
`BM25.retrieve` computes), and the best `k` of a block of queries picked together (`top_k`) instead of
one `argpartition` per query; each passage's sentences are split once, for the snippets of every later
hit, and each query's words are found once for all its hits (see `benchmarks/bm25_batch.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import bm25s
import bm25s.selection
import numpy as np

from livemed.common.atomic import writing_text
from livemed.common.heap import fewer_collections
from livemed.evidence.corpus import Passage, Sentences, corpus_hash, tokens
from livemed.records import EvidenceRef

PASSAGES_FILE = "passages.jsonl"
BLOCK_FLOATS = 1 << 22  # scores held at once (16 MiB of float32): the rows of one block of queries


def _tokenize(texts: list[str]) -> list[list[str]]:
    tokens: list[list[str]] = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
    return tokens


class BM25Retriever:
    """Lexical retrieval; hits with a zero score are not evidence."""

    name = "bm25"

    def __init__(self, passages: list[Passage], *, cache_dir: str | Path | None = None) -> None:
        if not passages:
            raise ValueError("an evidence corpus needs at least one passage")
        self.passages = passages
        self.key = corpus_hash(passages)
        self.index_dir = Path(cache_dir) / f"bm25-{self.key}" if cache_dir is not None else None
        self.loaded_from_disk = False
        self._bm25 = self._load() or self._build()
        self._sentences: dict[int, Sentences] = {}  # passage index -> its sentences, split once

    def _load(self) -> bm25s.BM25 | None:
        if self.index_dir is None or not (self.index_dir / PASSAGES_FILE).exists():
            return None
        self.loaded_from_disk = True
        return bm25s.BM25.load(str(self.index_dir), show_progress=False)

    def _build(self) -> bm25s.BM25:
        bm25 = bm25s.BM25()
        bm25.index(_tokenize([f"{p.title}\n{p.text}" for p in self.passages]), show_progress=False)
        if self.index_dir is not None:
            self.index_dir.mkdir(parents=True, exist_ok=True)
            bm25.save(str(self.index_dir), show_progress=False)
            # written last: its presence marks a complete index
            with writing_text(self.index_dir / PASSAGES_FILE) as handle:
                for passage in self.passages:
                    handle.write(json.dumps({"id": passage.id}) + "\n")
        return bm25

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        return self.search_sync(query, k=k)

    async def search_batch(self, queries: list[str], *, k: int = 3) -> list[list[EvidenceRef]]:
        return self.search_many(queries, k=k)

    def search_sync(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        return self.search_many([query], k=k)[0]

    @fewer_collections()
    def search_many(self, queries: list[str], *, k: int = 3) -> list[list[EvidenceRef]]:
        """The `k` best passages of each query as evidence (with snippets), in one bm25s call; the
        corpus and its index are not scanned by the collector meanwhile (`heap.fewer_collections`:
        with Python's default collector a quarter of this call's CPU went to rescanning them)."""
        found = self.hits(queries, k=k)
        refs: list[list[EvidenceRef]] = []
        for query, hits in zip(queries, found, strict=True):
            wanted = tokens(query) if hits else set()  # once per query, for the snippets of its hits
            refs.append([self._ref(index, score, wanted) for index, score in hits])
        return refs

    @fewer_collections()
    def hits(self, queries: list[str], *, k: int = 3) -> list[list[tuple[int, float]]]:
        """(passage index, score) of each query's `k` best passages, hits with a zero score left out:
        the same passages, order and scores as `BM25.retrieve(tokenize(queries), k=k)`."""
        tokenized = _tokenize(queries)
        asked = [i for i, tokens in enumerate(tokenized) if tokens]  # no words left: no evidence
        found: list[list[tuple[int, float]]] = [[] for _ in queries]
        k = min(k, len(self.passages))
        if not asked or k < 1:
            return found
        count = len(self.passages)
        rows = max(1, min(len(asked), BLOCK_FLOATS // count))
        block = np.empty((rows, count), dtype=self._bm25.dtype)
        for first in range(0, len(asked), rows):
            part = asked[first : first + rows]
            scores = block[: len(part)]
            for row, i in enumerate(part):
                scores[row] = self._bm25.get_scores(tokenized[i])
            indices, values = top_k(scores, k)
            for i, row_indices, row_values in zip(part, indices.tolist(), values.tolist(), strict=True):
                found[i] = [
                    (index, score) for index, score in zip(row_indices, row_values, strict=True) if score > 0
                ]
        return found

    def _ref(self, index: int, score: float, wanted: set[str]) -> EvidenceRef:
        passage = self.passages[index]
        sentences = self._sentences.get(index)
        if sentences is None:
            sentences = self._sentences[index] = Sentences(passage.text)
        return EvidenceRef(
            id=passage.id, snippet=sentences.snippet_of(wanted), score=round(score, 4), url=passage.url
        )


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best (column, score) of each row of `scores`, best first, as bm25s's own
    `selection.topk(row, k)` (what `BM25.retrieve` calls per query) gives them.

    The `k + 1` highest of every row are found together, one `argmax` over the block per place (a few
    µs a row instead of one `argpartition` of the row). Where the first `k + 1` of a row hold no two
    equal positive scores, a row's positive hits and their order are the only ones possible, so they
    are bm25s's; a row with such a tie (duplicate passages) is handed to `selection.topk` itself, whose
    tie order is its own. `scores` is left as it was.
    """
    count, size = scores.shape
    if k + 1 > size:  # no place left to see whether the k-th is tied with the next
        return _bm25s_top_k(
            scores, range(count), k, np.empty((count, k), dtype=np.int64), scores[:, :k].copy()
        )
    rows = np.arange(count)
    indices = np.empty((count, k + 1), dtype=np.int64)
    values = np.empty((count, k + 1), dtype=scores.dtype)
    for place in range(k + 1):
        best = scores.argmax(axis=1)
        indices[:, place] = best
        values[:, place] = scores[rows, best]
        scores[rows, best] = -np.inf
    for place in range(k, -1, -1):  # put back, last taken first
        scores[rows, indices[:, place]] = values[:, place]
    tied = ((values[:, :-1] == values[:, 1:]) & (values[:, :-1] > 0)).any(axis=1)
    indices, values = indices[:, :k], values[:, :k]
    return _bm25s_top_k(scores, np.flatnonzero(tied), k, indices, values)


def _bm25s_top_k(
    scores: np.ndarray, rows: Iterable[int], k: int, indices: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    for row in rows:
        values[row], indices[row] = bm25s.selection.topk(scores[row], k=k, sorted=True, backend="auto")
    return indices, values
