"""Batched against per-criterion grading, for one judge: how often they agree, and how often each fails.

Per-criterion grading (one call per criterion) is the reference. Batched grading shows the whole
rubric, weights included, in one call: cheaper, but open to halo effects and, on long rubrics, to
missing or duplicated verdicts from small models. `compare_modes` grades the same answers both ways
(nothing is stored; the calls go through the response cache, so per-criterion calls already made by
`livemed grade` cost nothing, and those made here are reused by a later `grade`) and returns the
agreement of the batched verdicts with the per-criterion ones (`agreement.metrics`, over criteria
with a verdict in both modes) and each mode's failures by reason. `livemed judges modes` prints it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from livemed.grade.grader import Judge, Target, grade_batch, grade_criterion
from livemed.judges.agreement import Agreement, metrics
from livemed.records import CALL_FAILED, Grade, GradeFailure


@dataclass
class ModeComparison:
    judge: str
    answers: int = 0
    criteria: int = 0
    compared: int = 0  # criteria with a verdict in both modes
    agreement: Agreement | None = None  # batched against per-criterion (the reference)
    batched_only_met: int = 0  # met in batched, not met per criterion
    per_criterion_only_met: int = 0
    failures: dict[str, Counter[str]] = field(
        default_factory=lambda: {"per-criterion": Counter(), "batched": Counter()}
    )

    def failure_rate(self, mode: str) -> float:
        return sum(self.failures[mode].values()) / self.criteria if self.criteria else 0.0

    @property
    def calls_failed(self) -> int:
        return sum(counts[CALL_FAILED] for counts in self.failures.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "answers": self.answers,
            "criteria": self.criteria,
            "compared": self.compared,
            "agreement": None if self.agreement is None else self.agreement.as_dict(),
            "batched_only_met": self.batched_only_met,
            "per_criterion_only_met": self.per_criterion_only_met,
            "failures": {mode: dict(counts) for mode, counts in self.failures.items()},
            "failure_rates": {mode: self.failure_rate(mode) for mode in self.failures},
        }


async def compare_modes(targets: Sequence[Target], judge: Judge, *, window: int = 16) -> ModeComparison:
    """Grade every target per criterion and batched; compare (see the module doc)."""
    gate = asyncio.Semaphore(window)

    async def bounded(coro: Any) -> Any:
        async with gate:
            return await coro

    per = await asyncio.gather(
        *(bounded(grade_criterion(t, c, judge)) for t in targets for c in t.rubric.criteria)
    )
    batched = await asyncio.gather(
        *(bounded(grade_batch(t, list(t.rubric.criteria), judge)) for t in targets)
    )
    return _compare(judge.id, len(targets), list(per), [g for batch in batched for g in batch])


def _compare(
    judge: str, answers: int, per: list[Grade | GradeFailure], batched: list[Grade | GradeFailure]
) -> ModeComparison:
    out = ModeComparison(judge=judge, answers=answers, criteria=len(per))
    reference: list[bool] = []
    other: list[bool] = []
    for a, b in zip(per, batched, strict=True):
        for mode, grade in (("per-criterion", a), ("batched", b)):
            if isinstance(grade, GradeFailure):
                out.failures[mode][grade.reason] += 1
        if isinstance(a, Grade) and isinstance(b, Grade):
            reference.append(a.met)
            other.append(b.met)
            out.batched_only_met += b.met and not a.met
            out.per_criterion_only_met += a.met and not b.met
    out.compared = len(reference)
    if reference:
        out.agreement = metrics(reference, other)
    return out
