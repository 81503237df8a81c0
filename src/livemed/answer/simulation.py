"""Simulation baselines for the contamination view: `offline/memorised` and `offline/drift-control`.

They are SIMULATIONS, not models: they exist so that `livemed demo` (and a user checking the
contamination analysis) can see what a contaminated model and a drift control look like. Every
Answer they write is labelled in its provenance (`settings.baseline = true`, `settings.simulation =
true`, and the declared cutoff), and their cutoffs come from the project's own `[analysis] cutoffs`
file (entries whose source says "simulation"), never from the bundled registry of real models.

- `memorised` "memorised" every case published on or before its declared cutoff: it answers those
  from the case's reference advice, and every later case like `offline/retrieval` (top BM25
  passages). Split at its cutoff it should show a contamination signal.
- `drift-control` answers every case like `offline/retrieval`; it is declared with a cutoff after
  every case, so the contamination view uses it as a drift control (how much harder newer cases are
  for a model that memorised nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from livemed.answer.baselines import RetrievalAnswerer, retrieval
from livemed.models.base import OfflineBaseline
from livemed.records import Case

if TYPE_CHECKING:
    from livemed.evidence.corpus import Passage

SIMULATED = ("offline/memorised", "offline/drift-control")
"""The simulation baselines' ids (`livemed models list` names them as simulations)."""

SIMULATION_NOTE = "a simulation for the contamination view, not a model"


class MemorisedAnswerer(OfflineBaseline):
    """Reference advice for cases published on or before `cutoff`, retrieval for the rest."""

    name = "memorised"

    def __init__(self, cutoff: date | None, fallback: RetrievalAnswerer) -> None:
        self.cutoff = cutoff
        self.fallback = fallback

    @property
    def labels(self) -> dict[str, object]:
        """Extra provenance settings: this answerer is a simulation with a declared cutoff."""
        cutoff = self.cutoff.isoformat() if self.cutoff else None
        return {"simulation": True, "cutoff": cutoff, "note": SIMULATION_NOTE}

    def memorised(self, case: Case) -> bool:
        return self.cutoff is not None and case.published.date() <= self.cutoff

    def prefetch(self, cases: Sequence[Case]) -> None:
        self.fallback.prefetch([case for case in cases if not self.memorised(case)])

    def answer(self, case: Case) -> str:
        if self.cutoff is None:
            raise ValueError("offline/memorised needs a declared cutoff (memorised(cutoff=...))")
        return "\n".join(case.advice) if self.memorised(case) else self.fallback.answer(case)


class DriftControlAnswerer(RetrievalAnswerer):
    """Retrieval answers under another name, declared with a cutoff after every case."""

    name = "drift-control"

    @property
    def labels(self) -> dict[str, object]:
        return {"simulation": True, "note": SIMULATION_NOTE}


def memorised(
    corpus: Sequence[Passage] | None = None,
    cutoff: date | None = None,
    index_dir: str | Path | None = None,
) -> MemorisedAnswerer:
    """`offline/memorised` with `cutoff`, falling back to BM25 retrieval over `corpus`."""
    return MemorisedAnswerer(cutoff, retrieval(corpus, index_dir=index_dir))


def drift_control(
    corpus: Sequence[Passage] | None = None, index_dir: str | Path | None = None
) -> DriftControlAnswerer:
    """`offline/drift-control`: BM25 retrieval over `corpus`, labelled as a simulation."""
    base = retrieval(corpus, index_dir=index_dir)
    return DriftControlAnswerer(base.retriever, k=base.k)
