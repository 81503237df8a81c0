"""Offline answerer baselines (no LLM): `offline/reference`, `offline/retrieval`, `offline/empty`.

They are *baselines*, labelled as such in every Answer's provenance (`settings.baseline = true`):

- `reference` answers with the case's gold advice — an upper bound for any grader.
- `retrieval` answers with the top BM25 passages (bm25s) for the case's query, from the evidence
  corpus it is given — what a search engine would say, with no reasoning about the patient.
- `empty` answers with nothing — the floor.

Each works on the `Case` record (`answer(case) -> str`). Called through the message-based `Model`
protocol, they fail with a clear message instead of pretending to be a chat model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from livemed.models import Completion, FatalModelError, Message, Settings
from livemed.records import Case


class OfflineBaseline:
    """Base of the no-LLM baselines: a `Model` in name (for the registry), records in practice."""

    name = "baseline"

    @property
    def id(self) -> str:
        return f"offline/{self.name}"

    @property
    def endpoint(self) -> str:
        return "offline"

    @property
    def supports_json_schema(self) -> bool:
        return False

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        raise FatalModelError(
            f"{self.id} is an offline baseline that works on records, not chat messages; "
            "use it with the commands that accept it (answer, grade, rubrics)"
        )


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


class Retriever(Protocol):
    """The small seam retrieval needs: the `k` best passages for a query."""

    def search(self, query: str, k: int) -> list[str]: ...


class BM25Retriever:
    """BM25 (bm25s) over a list of passages, English stopwords removed."""

    def __init__(self, passages: Sequence[str]) -> None:
        import bm25s

        if not passages:
            raise ValueError("the retrieval corpus is empty")
        self.passages = list(passages)
        self._bm25 = bm25s.BM25()
        self._bm25.index(
            bm25s.tokenize(self.passages, stopwords="en", show_progress=False), show_progress=False
        )

    def search(self, query: str, k: int) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.passages))
        indices, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        return [self.passages[int(i)] for i, s in zip(indices[0], scores[0], strict=True) if s > 0]


class RetrievalAnswerer(OfflineBaseline):
    """Answers with the top-k passages retrieved for the case's query and chief complaint."""

    name = "retrieval"

    def __init__(self, retriever: Retriever | None = None, k: int = 3) -> None:
        self.retriever = retriever
        self.k = k

    def answer(self, case: Case) -> str:
        if self.retriever is None:
            raise ValueError("offline/retrieval needs an evidence corpus (get_model(..., corpus=[...]))")
        query = " ".join([case.query, *case.narrative.chief_complaint, *case.narrative.symptoms])
        return "\n\n".join(self.retriever.search(query, self.k))


def reference() -> ReferenceAnswerer:
    return ReferenceAnswerer()


def empty() -> EmptyAnswerer:
    return EmptyAnswerer()


def retrieval(
    corpus: Sequence[str] | None = None, retriever: Retriever | None = None, k: int = 3
) -> RetrievalAnswerer:
    """`offline/retrieval` over `retriever`, or a BM25 index of `corpus`."""
    if retriever is None and corpus is not None:
        retriever = BM25Retriever(corpus)
    return RetrievalAnswerer(retriever, k=k)
