"""Offline answerer baselines (no LLM): `offline/reference`, `offline/retrieval`, `offline/empty`.

They are *baselines*, labelled as such in every Answer's provenance (`settings.baseline = true`):

- `reference` answers with the case's gold advice — an upper bound for any grader.
- `retrieval` answers with the top BM25 passages for the case's query (the curation stage's
  retriever over the evidence corpus it is given): what a search engine would say, with no
  reasoning about the patient.
- `empty` answers with nothing — the floor.

Each works on the `Case` record (`answer(case) -> str`). Called through the message-based `Model`
protocol, they fail with a clear message instead of pretending to be a chat model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from livemed.models.base import OfflineBaseline
from livemed.records import Case

if TYPE_CHECKING:
    from livemed.evidence.corpus import Passage


class ReferenceAnswerer(OfflineBaseline):
    """Answers with the gold advice: an upper bound."""

    name = "reference"

    def answer(self, case: Case) -> str:
        return "\n".join(case.advice)


class EmptyAnswerer(OfflineBaseline):
    """Answers with nothing: the floor."""

    name = "empty"

    def answer(self, case: Case) -> str:
        return ""


class Searcher(Protocol):
    """The seam retrieval needs (`BM25Retriever` satisfies it): each query's best passages, in one call."""

    passages: list[Passage]

    def hits(self, queries: list[str], *, k: int = 3) -> list[list[tuple[int, float]]]: ...


class RetrievalAnswerer(OfflineBaseline):
    """Answers with the full text of the top-k passages retrieved for the case's query and complaint.

    `prefetch(cases)` searches for many cases in one batched call (`answer_all` does it for the cases
    it has to answer); `answer(case)` uses that result, or searches for the one case."""

    name = "retrieval"

    def __init__(self, retriever: Searcher | None = None, k: int = 3) -> None:
        self.retriever = retriever
        self.k = k
        self._found: dict[str, list[int]] = {}  # case id -> passage indices, from prefetch()

    def prefetch(self, cases: Sequence[Case]) -> None:
        wanted = [case for case in cases if case.id not in self._found]
        if wanted:
            found = self._searcher().hits([_query(case) for case in wanted], k=self.k)
            self._found.update(
                (case.id, [i for i, _ in hits]) for case, hits in zip(wanted, found, strict=True)
            )

    def answer(self, case: Case) -> str:
        searcher = self._searcher()
        found = self._found.get(case.id)
        if found is None:
            found = [i for i, _ in searcher.hits([_query(case)], k=self.k)[0]]
        return "\n\n".join(searcher.passages[i].text for i in found)

    def _searcher(self) -> Searcher:
        if self.retriever is None:
            raise ValueError("offline/retrieval needs an evidence corpus (get_model(..., corpus=[...]))")
        return self.retriever


def _query(case: Case) -> str:
    return " ".join([case.query, *case.narrative.chief_complaint, *case.narrative.symptoms])


def reference() -> ReferenceAnswerer:
    return ReferenceAnswerer()


def empty() -> EmptyAnswerer:
    return EmptyAnswerer()


def retrieval(
    corpus: Sequence[Passage] | None = None,
    retriever: Searcher | None = None,
    k: int = 3,
    index_dir: str | Path | None = None,
) -> RetrievalAnswerer:
    """`offline/retrieval` over `retriever`, or a BM25 index (the curation retriever's) of `corpus`."""
    if retriever is None and corpus is not None:
        from livemed.evidence.bm25 import BM25Retriever

        retriever = BM25Retriever(list(corpus), cache_dir=index_dir)
    return RetrievalAnswerer(retriever, k=k)
