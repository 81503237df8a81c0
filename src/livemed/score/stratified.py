"""The stratified difference estimator of a total, and its variance: pure numbers, no I/O.

A population is split into cells; in each cell every item has a known prediction x_i (the grader's
verdict, times the item's weight) and an unknown truth y_i (the reviewers' verdict, times the same
weight). A simple random sample of each cell gets labelled (n_s of its N_s items). With λ fixed,

    T̂ = Σ_s [ λ·X_s + (N_s / n_s) · Σ_{i∈L_s} (y_i − λ·x_i) ]       (X_s = Σ_{i∈s} x_i, known)

is unbiased for T = Σ_i y_i whatever λ is: the second term is the expansion estimator of
Σ_s (Y_s − λ·X_s). λ = 1 is prediction-powered inference's estimator (PPI, a difference estimator);
λ = 0 is the classical labels-only expansion estimator. Its variance is estimated per cell,

    V̂ = Σ_s N_s² · (1 − n_s/N_s) · S²_s / n_s      (S²_s: the sample variance of y − λ·x, ddof 1)

with the finite-population correction (1 − n_s/N_s), dropped with `fpc=False` (sampling with
replacement, as ppi-python assumes). A cell whose items all are labelled adds no variance; a cell
with items of the domain but no label leaves the total unestimated (None); one with a single label
and more items leaves the variance unestimated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from scipy.stats import t as student_t

CONFIDENCE = 0.95
Interval = Literal["t", "normal"]


@dataclass(frozen=True)
class Cell:
    """One stratum as the estimator sees it, for one domain (a model, or a model on one axis).

    `known`: Σ x_i over the cell's whole population; `y`, `x`: the labelled items' truths and
    predictions (0 and 0 for a labelled item outside the domain); `members`: the domain's items in
    the cell (a cell without any adds nothing)."""

    population: int
    known: float
    y: tuple[float, ...]
    x: tuple[float, ...]
    members: int

    @property
    def labelled(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class Estimate:
    """A total's estimate with its standard error and normal interval (None where not estimable)."""

    value: float
    se: float | None
    ci_low: float | None
    ci_high: float | None


def estimate_total(
    cells: Sequence[Cell],
    *,
    lam: float = 1.0,
    fpc: bool = True,
    confidence: float = CONFIDENCE,
    interval: Interval = "t",
) -> Estimate | None:
    """T̂ and its interval over `cells`; None when a cell with domain items has no label."""
    parts = [_cell(cell, lam, fpc) for cell in cells]
    if any(part is None for part in parts):
        return None
    known = [part for part in parts if part is not None]
    value = sum(part[0] for part in known)
    if any(part[1] is None for part in known):
        return Estimate(value, None, None, None)
    pieces = [(part[1] or 0.0, part[2]) for part in known]
    se = float(np.sqrt(sum(v for v, _ in pieces)))
    half = _quantile(pieces, confidence, interval) * se
    return Estimate(value, se, value - half, value + half)


def _quantile(pieces: list[tuple[float, int]], confidence: float, interval: Interval) -> float:
    """The normal quantile, or Student's t with Satterthwaite's degrees of freedom
    (Σ V_s)² / Σ V_s² / (n_s − 1) over the cells' variance parts V_s."""
    if interval == "normal":
        return NormalDist().inv_cdf(0.5 + confidence / 2)
    total = sum(v for v, _ in pieces)
    spread = sum(v * v / (n - 1) for v, n in pieces if v > 0)
    if total <= 0 or spread <= 0:
        return NormalDist().inv_cdf(0.5 + confidence / 2)  # no variance: the interval is the point
    return float(student_t.ppf(0.5 + confidence / 2, total * total / spread))


def _cell(cell: Cell, lam: float, fpc: bool) -> tuple[float, float | None, int] | None:
    """(this cell's part of T̂, of V̂, its labels); None when it cannot be estimated."""
    n, big_n = cell.labelled, cell.population
    if cell.members == 0:
        return 0.0, 0.0, n  # every labelled item's y and x are 0 here: nothing to add
    if n == 0:
        return None
    residual = np.asarray(cell.y, dtype=float) - lam * np.asarray(cell.x, dtype=float)
    value = lam * cell.known + big_n / n * float(residual.sum())
    if fpc and n >= big_n:
        return value, 0.0, n  # a census of the cell
    if n < 2:
        return value, None, n
    shrink = 1.0 - n / big_n if fpc else 1.0
    return value, big_n**2 * shrink * float(residual.var(ddof=1)) / n, n
