"""The default retriever: BM25 (bm25s) over a passage corpus, with the index persisted on disk.

The index lives in `<cache_dir>/bm25-<corpus hash>/`; a changed corpus gets a new folder, an
unchanged one is loaded instead of re-indexed.
"""

from __future__ import annotations

import json
from pathlib import Path

import bm25s

from livemed.curate.evidence.corpus import Passage, corpus_hash, snippet
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

    def search_sync(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        query_tokens = _tokenize([query])
        if not query_tokens[0]:
            return []
        k = min(k, len(self.passages))
        indices, scores = self._bm25.retrieve(query_tokens, k=k, show_progress=False)
        refs = []
        for index, score in zip(indices[0], scores[0], strict=True):
            if score <= 0:
                continue
            passage = self.passages[int(index)]
            refs.append(
                EvidenceRef(
                    id=passage.id,
                    snippet=snippet(passage.text, query),
                    score=round(float(score), 4),
                    url=passage.url,
                )
            )
        return refs
