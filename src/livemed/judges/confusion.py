"""Weighted 2×2 tables of reviewer × grader verdicts and their figures, with stratified bootstrap
intervals (`judges/reviewed.py` builds them from the store).

A table is four cells, reviewer verdict first: (met, met), (met, not met), (not met, met), (not met,
not met), as `MM`, `MN`, `NM`, `NN`. `table_figures` computes accuracy, macro-F1, Cohen's kappa and
per-class precision and recall of a table or of a bootstrap's tables at once (scikit-learn's
definitions with `zero_division=0`; kappa is nan where chance agreement is 1). `tables` weighs each
item's row by its cell's population over the cell's items and draws `common.stats.
stratified_bootstrap_sums` of them; `always` turns a table into a trivial grader's on the same items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from livemed.common.stats import DEFAULT_RESAMPLES, FloatArray, stratified_bootstrap_sums

MM, MN, NM, NN = range(4)


def _ratio(top: FloatArray, bottom: FloatArray) -> FloatArray:
    """top / bottom, 0 where bottom is 0 (scikit-learn's zero_division=0)."""
    safe = np.where(bottom > 0, bottom, 1.0)
    return np.asarray(np.where(bottom > 0, top / safe, 0.0))


def table_figures(t: FloatArray) -> dict[str, FloatArray]:
    """Accuracy, macro-F1, Cohen's kappa (nan where chance agreement is 1) and per-class precision,
    recall and F1 of (weighted) 2×2 tables `t[..., MM|MN|NM|NN]` (reviewer verdict first)."""
    a, b, c, d = t[..., MM], t[..., MN], t[..., NM], t[..., NN]
    total = a + b + c + d
    accuracy = _ratio(a + d, total)
    f1_met, f1_not = _ratio(2 * a, 2 * a + b + c), _ratio(2 * d, 2 * d + b + c)
    chance = _ratio((a + b) * (a + c) + (c + d) * (b + d), total * total)
    defined = (1.0 - chance) > 1e-12
    kappa = np.where(defined, (accuracy - chance) / np.where(defined, 1.0 - chance, 1.0), np.nan)
    kappa = np.where(np.abs(kappa) < 1e-12, 0.0, kappa)  # a trivial grader's 0, not a rounding's -0.00
    return {
        "accuracy": accuracy,
        "macro_f1": (f1_met + f1_not) / 2,
        "cohen_kappa": np.asarray(kappa),
        "met precision": _ratio(a, a + c),
        "met recall": _ratio(a, a + b),
        "not met precision": _ratio(d, d + b),
        "not met recall": _ratio(d, d + c),
    }


@dataclass(frozen=True)
class Figure:
    """A figure over n items with its 95% percentile interval (None where not computable)."""

    value: float | None
    n: int
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "n": self.n, "low": self.low, "high": self.high}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _figure(point: FloatArray, draws: FloatArray | None, n: int) -> Figure:
    value = _finite(float(point))
    finite = draws[np.isfinite(draws)] if draws is not None else np.empty(0)
    if value is None or finite.size == 0:
        return Figure(value, n, None, None)
    low, high = np.percentile(finite, [2.5, 97.5])
    return Figure(value, n, float(low), float(high))


Transform = Callable[[FloatArray], FloatArray]


def always(met: bool) -> Transform:
    """The tables of a trivial grader that always says `met` (or not met), on the same items."""

    def table(t: FloatArray) -> FloatArray:
        said_met, said_not = t[..., MM] + t[..., MN], t[..., NM] + t[..., NN]
        zero = np.zeros_like(said_met)
        cells = (said_met, zero, said_not, zero) if met else (zero, said_met, zero, said_not)
        return np.stack(cells, axis=-1)

    return table


def _same(t: FloatArray) -> FloatArray:
    return t


@dataclass(frozen=True)
class Tables:
    """A comparison's weighted table and its bootstrap tables."""

    point: FloatArray
    draws: FloatArray | None
    n: int
    labels: int

    def figures(self, transform: Transform = _same) -> dict[str, Figure]:
        point, draws = table_figures(transform(self.point)), None
        if self.draws is not None:
            draws = table_figures(transform(self.draws))
        return {k: _figure(v, None if draws is None else draws[k], self.n) for k, v in point.items()}

    @property
    def majority_met(self) -> bool:
        return bool(self.point[MM] + self.point[MN] >= self.point[NM] + self.point[NN])


def tables(
    rows: Sequence[FloatArray], cells: Sequence[str], population: dict[str, int], labels: int, seed: int
) -> Tables:
    """The table of `rows` (one 2×2 row per item, unweighted, summing to 1) weighted by N_s / n_s,
    and `DEFAULT_RESAMPLES` stratified bootstrap tables of it."""
    counts: dict[str, int] = defaultdict(int)
    for cell in cells:
        counts[cell] += 1
    weights = np.array([population.get(cell, 0) / counts[cell] for cell in cells])
    weighted = np.asarray(rows, dtype=np.float64).reshape(len(cells), 4) * weights[:, None]
    draws = stratified_bootstrap_sums(
        weighted, list(cells), resamples=DEFAULT_RESAMPLES, rng=np.random.default_rng(seed)
    )
    return Tables(weighted.sum(axis=0), draws, len(cells), labels)
