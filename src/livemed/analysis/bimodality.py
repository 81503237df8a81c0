"""The score-distribution check: a model whose answer scores pile up at 0 and at 1.

The method advises checking the distribution of rubric scores after grading: when most answers
score (nearly) 0 or (nearly) 1 and few fall between, one or two heavy criteria decide each answer,
and the criterion weights may be too extreme. Per model, over its scored answers: the share at or
below `EDGE` (0.05), the share at or above 1 − `EDGE`, and Sarle's bimodality coefficient
(`closed_form.bimodality_coefficient`). A model is flagged when it has at least `MIN_N` (20) answers, each
end holds at least `MIN_SIDE` (15%) of them and both ends together at least `MIN_ENDS` (60%); with
fewer answers it is not judged ("too few"). Pure: scores in, rows out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from livemed.analysis.inputs import Scored
from livemed.common import closed_form, stats

EDGE = 0.05
MIN_N = 20
MIN_SIDE = 0.15
MIN_ENDS = 0.6


@dataclass(frozen=True)
class BimodalityRow:
    model: str
    n: int
    share_low: float  # answers scoring at most EDGE
    share_high: float  # answers scoring at least 1 - EDGE
    coefficient: float | None  # Sarle's; None when not computable
    bimodal: bool
    judged: bool  # False: fewer than MIN_N answers

    @property
    def share_middle(self) -> float:
        return max(0.0, 1.0 - self.share_low - self.share_high)

    def warning(self) -> str | None:
        """The one-line warning for a flagged model, else None."""
        if not self.bimodal:
            return None
        return (
            f"{self.model}: scores pile up at 0 and 1 ({self.share_low:.0%} of {self.n} answers score "
            f"≤ {EDGE}, {self.share_high:.0%} ≥ {1 - EDGE}, {self.share_middle:.0%} between): criterion "
            "weights may be too extreme (a few heavy criteria decide each answer): review the rubrics' "
            "weights"
        )


def check(values: Iterable[float], model: str = "") -> BimodalityRow:
    """The check on one model's answer scores."""
    xs = [float(v) for v in values]
    n = len(xs)
    low = sum(x <= EDGE for x in xs) / n if n else 0.0
    high = sum(x >= 1 - EDGE for x in xs) / n if n else 0.0
    judged = n >= MIN_N
    bimodal = judged and low >= MIN_SIDE and high >= MIN_SIDE and low + high >= MIN_ENDS
    coefficient = stats.finite_or_none(closed_form.bimodality_coefficient(xs))
    return BimodalityRow(model, n, low, high, coefficient, bimodal, judged)


def score_distribution(scores: Iterable[Scored]) -> list[BimodalityRow]:
    """One row per model (sorted), over its scored answers."""
    by_model: dict[str, list[float]] = defaultdict(list)
    for score in scores:
        by_model[score.model].append(score.score)
    return [check(values, model) for model, values in sorted(by_model.items())]


def warnings(rows: Iterable[BimodalityRow]) -> list[str]:
    return [w for row in rows if (w := row.warning()) is not None]
