"""Evidence retrieval: for the Validator's alignment check, and for the retrieval answerer baseline.

A retriever is anything with `async search(query, k=...) -> list[EvidenceRef]`; an empty list means
no evidence (the advice element then scores 0.0). One that can answer many queries at once also has
`async search_batch(queries, k=...)` (BM25: one bm25s call); `search_all` uses it when it is there.
A search that could not be made (network down) raises `RetrievalError` instead: that is a call
failure, retried on the next run, not a verdict.
Implementations:

- `BM25Retriever` (default): bm25s over a JSONL corpus (`id, title, text, url, licence`), with the
  index persisted on disk under a cache folder keyed by the corpus hash;
- `EuropePMCRetriever`: live search of Europe PMC's REST API (abstracts);
- `DenseRetriever`: any sentence-embedding encoder (extra `livemed[dense]`).

Corpora load with `load_corpus` (JSONL) or `load_medquad` (MedQuAD's answered pairs).
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from livemed.errors import RetrievalError
from livemed.evidence.corpus import Passage, corpus_hash, load_corpus, load_medquad, snippet
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


async def search_all(retriever: Retriever, queries: list[str], k: int) -> list[list[EvidenceRef]]:
    """Every query's hits: one batched search where the retriever has `search_batch`, else the
    searches run concurrently and the first failure cancels (and awaits) the rest.

    A bare `asyncio.gather` would leave the sibling searches running after one failed, still holding
    connections when the case is already rejected.
    """
    batch = getattr(retriever, "search_batch", None)
    if batch is not None:
        found: list[list[EvidenceRef]] = await batch(queries, k=k)
        return found
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(retriever.search(query, k=k)) for query in queries]
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]


__all__ = [
    "NoEvidence",
    "Passage",
    "RetrievalError",
    "Retriever",
    "corpus_hash",
    "load_corpus",
    "load_medquad",
    "search_all",
    "snippet",
]
