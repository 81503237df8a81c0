"""Evidence retrieval for the Validator's alignment check.

A retriever is anything with `async search(query, k=...) -> list[EvidenceRef]`; an empty list means
no evidence (the advice element then scores 0.0). A search that could not be made (network down)
raises `RetrievalError` instead: that is a call failure, retried on the next run, not a verdict.
Implementations:

- `BM25Retriever` (default): bm25s over a JSONL corpus (`id, title, text, url, licence`), with the
  index persisted on disk under a cache folder keyed by the corpus hash;
- `EuropePMCRetriever`: live search of Europe PMC's REST API (abstracts);
- `DenseRetriever`: any sentence-embedding encoder (extra `livemed[dense]`).

Corpora load with `load_corpus` (JSONL) or `load_medquad` (MedQuAD's answered pairs).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from livemed.curate.evidence.corpus import Passage, corpus_hash, load_corpus, load_medquad, snippet
from livemed.errors import RetrievalError
from livemed.records import EvidenceRef


@runtime_checkable
class Retriever(Protocol):
    """Finds evidence passages for a piece of advice."""

    @property
    def name(self) -> str: ...

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]: ...


class NoEvidence:
    """A retriever that never finds anything (every advice element then scores 0.0)."""

    name = "none"

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        return []


__all__ = [
    "NoEvidence",
    "Passage",
    "RetrievalError",
    "Retriever",
    "corpus_hash",
    "load_corpus",
    "load_medquad",
    "snippet",
]
