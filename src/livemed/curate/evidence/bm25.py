"""The default retriever: BM25 (bm25s) over a passage corpus, with the index persisted on disk.

The index lives in `<cache_dir>/bm25-<corpus hash>/`; a changed corpus gets a new folder, an
unchanged one is loaded instead of re-indexed. `search_batch` / `search_many` answer many queries
with one bm25s call (one tokenisation, one scoring pass); each passage's sentences are split once, for
the snippets of every later hit, and each query's words are found once for all its hits (see
`benchmarks/bm25_batch.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import bm25s

from livemed.curate.evidence.corpus import Passage, Sentences, corpus_hash, tokens
from livemed.records import EvidenceRef

PASSAGES_FILE = "passages.jsonl"


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
            with (self.index_dir / PASSAGES_FILE).open("w", encoding="utf-8") as handle:
                for passage in self.passages:
                    handle.write(json.dumps({"id": passage.id}) + "\n")
        return bm25

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        return self.search_sync(query, k=k)

    async def search_batch(self, queries: list[str], *, k: int = 3) -> list[list[EvidenceRef]]:
        return self.search_many(queries, k=k)

    def search_sync(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        return self.search_many([query], k=k)[0]

    def search_many(self, queries: list[str], *, k: int = 3) -> list[list[EvidenceRef]]:
        """The `k` best passages of each query as evidence (with snippets), in one bm25s call."""
        found = self.hits(queries, k=k)
        refs: list[list[EvidenceRef]] = []
        for query, hits in zip(queries, found, strict=True):
            wanted = tokens(query) if hits else set()  # once per query, for the snippets of its hits
            refs.append([self._ref(index, score, wanted) for index, score in hits])
        return refs

    def hits(self, queries: list[str], *, k: int = 3) -> list[list[tuple[int, float]]]:
        """(passage index, score) of each query's `k` best passages, hits with a zero score left out."""
        tokenized = _tokenize(queries)
        asked = [i for i, tokens in enumerate(tokenized) if tokens]  # no words left: no evidence
        found: list[list[tuple[int, float]]] = [[] for _ in queries]
        if not asked:
            return found
        k = min(k, len(self.passages))
        indices, scores = self._bm25.retrieve([tokenized[i] for i in asked], k=k, show_progress=False)
        for row, i in enumerate(asked):
            found[i] = [
                (int(index), float(score))
                for index, score in zip(indices[row], scores[row], strict=True)
                if score > 0
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
