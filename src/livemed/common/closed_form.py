"""The statistics computed in closed form, without resampling: the Mann–Whitney rank test
(`mann_whitney_greater`), Cliff's delta, Spearman's correlation, Benjamini–Hochberg's FDR, Sarle's
bimodality coefficient (with the bias-corrected skewness and excess kurtosis) and a proportion with its
Wilson interval (`Proportion`, `proportion`); every resampled statistic, the score conventions and the
leaderboard ranking are `common/stats.py`'s, whose conventions these follow ("not computable" is `nan`,
or None for a proportion of nothing; never an exception or a warning). Spearman's correlation,
skewness and kurtosis are numpy with scipy's own operations (the same floats:
tests/analysis/test_stats_numpy.py; `import scipy.stats` alone is ~1 CPU s); Mann–Whitney, FDR and
Wilson's interval are scipy.stats, imported when first used. The Mann–Whitney p-value and Cliff's
delta need one value in each sample (exact for tiny samples); Spearman's correlation needs three pairs
and two distinct values on each side; the bimodality coefficient four values, not all equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from livemed.common.stats import MIN_N, FloatArray, _constant, as_array

MIN_CLUSTERS = 10  # a bootstrap over fewer items (each holding several units) is not enough data either


def mann_whitney_greater(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """One-sided Mann–Whitney U p-value for x tending to be larger than y.

    Not computable (nan): either sample empty. Every value equal → 1.0; one value each is exact
    (x > y → 0.5)."""
    a, b = as_array(x), as_array(y)
    if a.size == 0 or b.size == 0:
        return math.nan
    if np.all(np.concatenate([a, b]) == a[0]):
        return 1.0
    from scipy import stats

    return float(stats.mannwhitneyu(a, b, alternative="greater").pvalue)


def cliffs_delta(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float:
    """Cliff's delta: P(x > y) − P(x < y) over all pairs, in [-1, 1].

    Not computable (nan): either sample empty."""
    a, b = as_array(x), as_array(y)
    if a.size == 0 or b.size == 0:
        return math.nan
    greater = int(np.sum(a[:, None] > b[None, :]))
    less = int(np.sum(a[:, None] < b[None, :]))
    return (greater - less) / (a.size * b.size)


def spearman(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> tuple[float, float]:
    """Spearman's rank correlation of paired samples and its two-sided p-value.

    `scipy.stats.spearmanr`'s steps in numpy (average ranks for ties, Pearson's correlation of the
    ranks by `np.corrcoef`, the t statistic on n − 2 degrees of freedom and Student's t survival
    function, `scipy.special.stdtr`), so the numbers are scipy's (tests/analysis/test_stats_numpy.py)
    without importing all of `scipy.stats` (~1 CPU s).

    Not computable (nan, nan): fewer than three pairs, either sample constant (no ranks to order), or
    a nan among the values (scipy's `nan_policy="propagate"`)."""
    a, b = as_array(x), as_array(y)
    if a.size < 3 or a.size != b.size or _constant(a) or _constant(b):
        return math.nan, math.nan
    if np.isnan(a).any() or np.isnan(b).any():
        return math.nan, math.nan
    ranks = np.column_stack((_average_ranks(a), _average_ranks(b)))
    rs: FloatArray = np.asarray(np.corrcoef(ranks, rowvar=False))
    dof = a.size - 2
    with np.errstate(divide="ignore"):  # rs may be ±1: t is then infinite and p 0
        t = rs * np.sqrt((dof / ((rs + 1.0) * (1.0 - rs))).clip(0))
    from scipy.special import stdtr

    p = 2 * stdtr(dof, -np.abs(t))
    return float(rs[1, 0]), float(p[1, 0])


def _average_ranks(x: FloatArray) -> FloatArray:
    """Ranks 1..n of x, tied values sharing the mean of their ranks (`scipy.stats.rankdata`'s
    "average"; the ranks are whole or half numbers, so any exact method gives the same floats)."""
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # first index of each run
    ends = np.r_[starts[1:], x.size]  # one past its last
    ranks = np.empty(x.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values); nan inputs stay nan and are not counted.

    No p-values → an empty list; only nan → only nan."""
    p = as_array(p_values)
    out = np.full(p.shape, np.nan)
    valid = ~np.isnan(p)
    if valid.any():
        from scipy import stats

        out[valid] = stats.false_discovery_control(p[valid], method="bh")
    return [float(v) for v in out]


def bimodality_coefficient(values: Sequence[float] | FloatArray) -> float:
    """Sarle's bimodality coefficient (g² + 1) / (k + 3(n−1)²/((n−2)(n−3))), with the sample skewness g
    and excess kurtosis k (bias-corrected: `_skewness`, `_excess_kurtosis`); above 5/9 (a uniform
    distribution's value) suggests two modes. Not computable (nan): fewer than four values, all of them
    equal, or a nan among them."""
    x = as_array(values)
    n = x.size
    if n < 4 or _constant(x):
        return math.nan
    g = _skewness(x)
    k = _excess_kurtosis(x)
    return (g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


def _moments(values: Sequence[float] | FloatArray) -> tuple[int, np.float64, np.float64, np.float64] | None:
    """(n, m2, m3, m4): the 2nd, 3rd and 4th central moments with `scipy.stats`' own operations (its
    `_moment`: d², d²·d and (d²)² of d = x − mean, each averaged), so the floats are scipy's; None where
    scipy's skew and kurtosis are nan: no values, a nan among them, or no spread (m2 ≤ (eps · mean)²)."""
    x = as_array(values)
    if x.size == 0:
        return None
    mean = np.mean(x, axis=0, keepdims=True)
    d = x - mean
    square = d**2
    m2, m3, m4 = np.mean(square, axis=0), np.mean(square * d, axis=0), np.mean(square**2, axis=0)
    if np.isnan(mean[0]) or m2 <= (np.finfo(np.float64).eps * mean[0]) ** 2:
        return None
    return x.size, m2, m3, m4


def _skewness(values: Sequence[float] | FloatArray) -> float:
    """The bias-corrected sample skewness, as `scipy.stats.skew(x, bias=False)`: √(n(n−1))/(n−2) ·
    m3/m2^1.5, the uncorrected m3/m2^1.5 for two values (scipy's rule). nan: no values, no spread, or a
    nan among them."""
    if (moments := _moments(values)) is None:
        return math.nan
    n, m2, m3, _ = moments
    if n <= 2:
        return float(m3 / m2**1.5)
    return float(((n - 1.0) * n) ** 0.5 / (n - 2.0) * m3 / m2**1.5)


def _excess_kurtosis(values: Sequence[float] | FloatArray) -> float:
    """The bias-corrected sample excess kurtosis, as `scipy.stats.kurtosis(x, bias=False)`:
    ((n²−1)·m4/m2² − 3(n−1)²) / ((n−2)(n−3)), the uncorrected m4/m2² − 3 for up to three values
    (scipy's rule). nan: no values, no spread, or a nan among them."""
    if (moments := _moments(values)) is None:
        return math.nan
    n, m2, _, m4 = moments
    if n <= 3:
        return float(m4 / m2**2.0 - 3)
    corrected = 1.0 / (n - 2) / (n - 3) * ((n**2 - 1.0) * m4 / m2**2.0 - 3 * (n - 1) ** 2.0)
    return float(corrected + 3.0 - 3)  # scipy adds 3 (Pearson's) and takes it away (Fisher's)


@dataclass(frozen=True)
class Proportion:
    """`k` of `n` with its Wilson score interval (`proportion`), or a bootstrap over the items its units
    cluster in (`items`: how many); `small` when n < MIN_N, or fewer than MIN_CLUSTERS items."""

    k: int
    n: int
    low: float | None
    high: float | None
    items: int | None = None

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def small(self) -> bool:
        return self.n < MIN_N or (self.items is not None and self.items < MIN_CLUSTERS)

    def as_dict(self) -> dict[str, float | int | None]:
        out = {"value": self.value, "k": self.k, "n": self.n, "low": self.low, "high": self.high}
        return out if self.items is None else {**out, "items": self.items}


def proportion(k: int, n: int, confidence: float = 0.95) -> Proportion:
    """`k` successes of `n` with the Wilson score interval (`scipy.stats.binomtest`'s `proportion_ci`,
    imported when first used). Not computable for n = 0: no value and no interval (None)."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Proportion(0, 0, None, None)
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Proportion(k, n, float(ci.low), float(ci.high))
