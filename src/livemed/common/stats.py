"""Every resampled statistic of the package and the leaderboard's numbers: seeded bootstrap intervals,
permutation tests, the score conventions' aggregates (`finish_means`, `aggregate`, `summarize`) and the
ranking of models by them (`rank_models`). The statistics computed in closed form (Mann–Whitney,
Cliff's delta, Spearman, FDR, the bimodality coefficient, Wilson's proportion) are
`common/closed_form.py`'s, which follows the conventions and uses the helpers defined here.

Every bootstrap resample of the package is drawn here (`_resampled_means`, `cluster_bootstrap`,
`bootstrap_paired_diff`): seeded, percentile intervals, drawn in batches that bound memory.

Typed functions so that every analysis uses the same conventions: percentile intervals, a seeded
generator, and `nan` instead of an exception or a warning when a sample is too small. The bootstrap
intervals and the sign-flip test are numpy, linear in the number of cases, drawn in batches (the
percentile intervals equal `scipy.stats.bootstrap(method="percentile")`'s under the same generator,
the exact sign-flip p-values equal `scipy.stats.permutation_test`'s: tests/analysis/test_stats_batched.py);
the two-sample permutation test is scipy.stats (imported when first used, so a command that needs
none of it does not pay for importing scipy, ~1 CPU s).

"Not computable" is `nan` here, always (never an exception, never a made-up number); the analysis
tables turn it into `None` (`finite_or_none`), which the CLI and the report show as "—" (the score
aggregates `aggregate` and `bootstrap` raise ValueError on no values, `summarize` gives None). The rules:

- an estimate (a mean, a difference of means) needs one value in each sample it uses;
- an interval needs two values in each resampled sample (one value has no spread to resample);
  all-equal values give the zero-width interval every resample agrees on;
- a permutation p-value needs two values in each sample; when every value is equal (or, paired, every
  difference is 0) no rearrangement differs from the observed one and p = 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
DEFAULT_RESAMPLES = 2000  # the default of [analysis] resamples, so scores and leaderboard agree
DEFAULT_PERMUTATIONS = 5000
ZERO_POSITIVE = "zero positive weight"  # why a case without a score is left out of an aggregate
BATCH_VALUES = 1 << 21  # resampled values held at once (~16 MiB of float64 per array): bounds memory
MIN_N = 30  # a figure over fewer units (a proportion, a bootstrap over items) is shown as "n too small"


def _resample_batch(n: int) -> int:
    """How many resamples of `n` values one vectorised call gets, so memory stays bounded whatever n.

    scipy draws the batches from the same seeded generator in order, so a batched result equals the
    unbatched one exactly (tests/analysis/test_stats_batched.py)."""
    return max(1, BATCH_VALUES // max(1, n))


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (bounds are nan when they cannot be computed)."""

    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        """True when the interval lies wholly above or below 0; False when its bounds are nan."""
        return self.low > 0 or self.high < 0


NAN_INTERVAL = Interval(math.nan, math.nan, math.nan)


def as_array(values: Sequence[float] | FloatArray) -> FloatArray:
    """The values as a float64 array (an empty sequence gives an empty array)."""
    return np.asarray(values, dtype=np.float64)


def finite_or_none(value: float) -> float | None:
    """`value`, or None when it is not computable (nan) or infinite: what the analysis tables store."""
    return float(value) if math.isfinite(value) else None


def _constant(x: FloatArray) -> bool:
    return bool(np.all(x == x[0]))


def _diff_means(x: FloatArray, y: FloatArray, axis: int = -1) -> FloatArray:
    return np.asarray(np.mean(x, axis=axis) - np.mean(y, axis=axis))


def finish_means(means: Any, convention: str = "livemed") -> Any:
    """The convention's last step on a mean (or an array of resampled means): HealthBench clips it to
    [0, 1]; livemed's case scores are already clipped, so their mean is left as it is. Not computable
    (nan) stays nan."""
    if convention == "healthbench":
        return np.clip(means, 0.0, 1.0)
    return means


def aggregate(values: Sequence[float], convention: str = "livemed") -> float:
    """Mean of case scores; HealthBench clips the mean, livemed's case scores are already clipped.

    Not computable: no values → ValueError (as `livemed scores` has always had it)."""
    if not values:
        raise ValueError("no case scores to aggregate")
    return float(finish_means(float(np.mean(np.asarray(values, dtype=float))), convention))


def _finished_diff(convention: str, share: float = 1.0) -> Callable[..., FloatArray]:
    """convention(mean(all)) − convention(mean(y)), where x is the rest and y the subset with share
    (n_rest / n) of the whole; share 1 and a livemed convention give plain mean(x) − mean(y)."""

    def statistic(x: FloatArray, y: FloatArray, axis: int = -1) -> FloatArray:
        mx, my = np.mean(x, axis=axis), np.mean(y, axis=axis)
        whole = mx if share == 1.0 else share * mx + (1 - share) * my
        return np.asarray(finish_means(whole, convention) - finish_means(my, convention))

    return statistic


def bootstrap(
    values: Sequence[float] | FloatArray,
    convention: str = "livemed",
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """(low, high, std) of the convention's mean over `resamples` seeded resamples of the values: the
    percentile interval and the spread of the resampled means (each finished by the convention).

    Not computable: one value → all nan (no spread to resample); no values → ValueError. All-equal
    values are resampled too: their bounds are the value, their spread the resampled means'."""
    x = as_array(values)
    if x.size == 0:
        raise ValueError("no case scores to bootstrap")
    if x.size == 1:
        return math.nan, math.nan, math.nan
    means = finish_means(_resampled_means(x, resamples, np.random.default_rng(seed)), convention)
    return (*_percentile(means, level), float(means.std()))


def bootstrap_mean(
    values: Sequence[float] | FloatArray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    convention: str = "livemed",
) -> Interval:
    """Mean with a percentile bootstrap interval (`bootstrap`'s).

    Not computable: no values → every field nan; one value → the estimate, nan bounds. All-equal
    values → the zero-width interval (what every resample gives; not drawn). Under the healthbench
    convention the mean and every resampled mean are clipped to [0, 1]."""
    x = as_array(values)
    if x.size == 0:
        return NAN_INTERVAL
    estimate = float(finish_means(x.mean(), convention))
    if x.size < 2:
        return Interval(estimate, math.nan, math.nan)
    if _constant(x):
        return Interval(estimate, estimate, estimate)
    low, high, _ = bootstrap(x, convention, resamples=resamples, seed=seed, level=level)
    return Interval(estimate, low, high)


@dataclass(frozen=True)
class Summary:
    """An aggregate with its convention, sample size and bootstrap interval."""

    convention: str
    mean: float
    n: int
    ci_low: float | None  # None: not computable (fewer than two cases)
    ci_high: float | None
    bootstrap_std: float | None
    excluded: dict[str, int] = field(default_factory=dict)


def summarize(
    values: Sequence[float | None],
    convention: str = "livemed",
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> Summary | None:
    """Aggregate case scores (None = no positive weight: excluded and counted); None when nothing is left.

    Not computable: nothing left → None; one value → the mean, no interval and no spread (None). The
    interval is `bootstrap_mean`'s (the leaderboard's: one number, one CI), drawn once for the
    interval and the spread (all-equal values are drawn too: their spread is the resampled means')."""
    kept = [value for value in values if value is not None]
    excluded = {ZERO_POSITIVE: len(values) - len(kept)} if len(kept) < len(values) else {}
    if not kept:
        return None
    bounds = bootstrap(kept, convention, resamples=resamples, seed=seed, level=level)
    low, high, std = (None if math.isnan(v) else v for v in bounds)
    return Summary(convention, aggregate(kept, convention), len(kept), low, high, std, excluded)


def rank_models(
    per_model: Mapping[str, Sequence[float]],
    convention: str = "livemed",
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> list[tuple[str, Summary]]:
    """The leaderboard's numbers: each model's `summarize` of its per-case scores (each resampled with
    the same `seed`), best mean first, ties broken by model name.

    Not computable: a model with one value has no interval (`summarize`'s None); no models → []; a
    model with no values → ValueError."""
    table = []
    for model, values in per_model.items():
        summary = summarize(values, convention, resamples=resamples, seed=seed, level=level)
        if summary is None:
            raise ValueError(f"no case scores to rank for {model}")
        table.append((model, summary))
    return sorted(table, key=lambda entry: (-entry[1].mean, entry[0]))


def bootstrap_diff(
    x: Sequence[float] | FloatArray,
    y: Sequence[float] | FloatArray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    convention: str = "livemed",
    share: float = 1.0,
) -> Interval:
    """mean(x) − mean(y) for two independent samples, each resampled on its own (each mean finished
    by the convention; see `_finished_diff` for `share`), percentile interval. Each sample has its own
    stream spawned from `seed` and is drawn in batches (bounded memory; the same result unbatched).

    Not computable: either sample empty → every field nan; either with one value → the estimate, nan
    bounds. Both samples constant → the zero-width interval."""
    a, b = as_array(x), as_array(y)
    if a.size == 0 or b.size == 0:
        return NAN_INTERVAL
    statistic = _finished_diff(convention, share)
    estimate = float(statistic(a, b))
    if a.size < 2 or b.size < 2:
        return Interval(estimate, math.nan, math.nan)
    if _constant(a) and _constant(b):
        return Interval(estimate, estimate, estimate)
    # each sample resampled from its own seeded stream, in batches: equal to one unbatched draw
    stream_a, stream_b = np.random.default_rng(seed).spawn(2)
    mx, my = _resampled_means(a, resamples, stream_a), _resampled_means(b, resamples, stream_b)
    whole = mx if share == 1.0 else share * mx + (1 - share) * my
    theta = np.asarray(finish_means(whole, convention) - finish_means(my, convention))
    return Interval(estimate, *_percentile(theta, level))


def _percentile(theta: FloatArray, level: float) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution (linear interpolation, numpy's default)."""
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(theta, [tail, 100 - tail])
    return float(low), float(high)


def _resampled_means(x: FloatArray, resamples: int, rng: np.random.Generator) -> FloatArray:
    """The means of `resamples` seeded resamples of x, drawn `_resample_batch` rows at a time (rows in
    order from one generator, so the result does not depend on the batch)."""
    means = np.empty(resamples)
    step = _resample_batch(x.size)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        means[start : start + rows] = x[rng.integers(0, x.size, size=(rows, x.size))].mean(axis=1)
    return means


def cluster_bootstrap(
    values: Sequence[float], clusters: Sequence[str], *, resamples: int, rng: np.random.Generator
) -> FloatArray | None:
    """`resamples` bootstrap means of units that cluster in items: the items (`clusters` names each
    unit's) drawn with replacement (`rng.integers(0, m, (rows, m))` over the m sorted item names, rows
    in order from `rng`, `_resample_batch(m)` at a time), each draw's mean over its items' units.

    Not computable: fewer than 2 items → None."""
    names = sorted(set(clusters))
    if len(names) < 2:
        return None
    index = {name: i for i, name in enumerate(names)}
    codes = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=len(clusters))
    sums = np.bincount(codes, weights=np.asarray(values, dtype=np.float64), minlength=len(names))
    counts = np.bincount(codes, minlength=len(names)).astype(np.float64)
    m = len(names)
    draws = np.empty(resamples)
    step = _resample_batch(m)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        picked = rng.integers(0, m, size=(rows, m))
        draws[start : start + rows] = sums[picked].sum(axis=1) / counts[picked].sum(axis=1)
    return draws


def bootstrap_paired_diff(
    x: Sequence[float] | FloatArray,
    y: Sequence[float] | FloatArray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    convention: str = "livemed",
) -> Interval:
    """convention(mean(x)) − convention(mean(y)) for paired samples (the same cases resampled for both).

    Not computable: no pairs → every field nan; one pair → the estimate, nan bounds. Both samples
    constant → the zero-width interval."""
    a, b = as_array(x), as_array(y)
    if a.size == 0:
        return NAN_INTERVAL
    statistic = _finished_diff(convention)
    estimate = float(statistic(a, b))
    if a.size < 2:
        return Interval(estimate, math.nan, math.nan)
    if _constant(a) and _constant(b):
        return Interval(estimate, estimate, estimate)
    rng = np.random.default_rng(seed)  # one index draw per resample, shared by both samples
    theta = np.empty(resamples)
    step = _resample_batch(2 * a.size)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        picked = rng.integers(0, a.size, size=(rows, a.size))
        theta[start : start + rows] = statistic(a[picked], b[picked])
    return Interval(estimate, *_percentile(theta, level))


def bootstrap_full_minus_subset(
    values: Sequence[float] | FloatArray,
    in_subset: Sequence[bool] | NDArray[np.bool_],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    convention: str = "livemed",
) -> Interval:
    """mean(all) − mean(subset), with the subset and the rest resampled separately (sizes fixed).

    mean(all) is rebuilt from the two resampled means weighted by their sizes; under the healthbench
    convention each of the two means is clipped to [0, 1] before the difference.

    Not computable: no values or an empty subset → every field nan; the subset or the rest with one
    value → the estimate, nan bounds. A subset holding every value → 0 with a zero-width interval
    (the two means are the same in every resample).
    """
    x = as_array(values)
    mask = np.asarray(in_subset, dtype=bool)
    if x.size == 0 or not mask.any():
        return NAN_INTERVAL
    estimate = float(finish_means(x.mean(), convention) - finish_means(x[mask].mean(), convention))
    if mask.all():
        return Interval(estimate, estimate, estimate)
    share = float((~mask).sum()) / x.size
    split = bootstrap_diff(
        x[~mask], x[mask], resamples=resamples, level=level, seed=seed, convention=convention, share=share
    )
    return Interval(estimate, split.low, split.high)


def permutation_p_independent(
    x: Sequence[float] | FloatArray,
    y: Sequence[float] | FloatArray,
    *,
    alternative: str = "greater",
    resamples: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
) -> float:
    """Permutation p-value for mean(x) − mean(y) (exact when the permutations are few enough).

    Not computable (nan): either sample with fewer than two values. Every value equal → 1.0."""
    a, b = as_array(x), as_array(y)
    if a.size < 2 or b.size < 2:
        return math.nan
    if _constant(np.concatenate([a, b])):
        return 1.0
    from scipy import stats

    result = stats.permutation_test(
        (a, b),
        _diff_means,
        permutation_type="independent",
        alternative=alternative,
        n_resamples=resamples,
        vectorized=True,
        batch=_resample_batch(a.size + b.size),
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def permutation_p_paired(
    differences: Sequence[float] | FloatArray,
    *,
    alternative: str = "two-sided",
    resamples: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
) -> float:
    """Sign-flip permutation p-value for the mean of paired differences being 0.

    Exact (every one of the 2^n sign patterns) when 2^n <= `resamples`; otherwise `resamples` random
    patterns, each difference's sign flipped with probability 1/2, drawn from the seeded generator
    `_resample_batch` patterns at a time (bounded memory; the same result unbatched), and the p-value
    (count + 1) / (resamples + 1). Observed and null means are compared with scipy's relative
    tolerance, and the two-sided p-value is twice the smaller one-sided one (at most 1): the rules
    of `scipy.stats.permutation_test(permutation_type="samples")`, whose exact p-values these equal
    (tests/analysis/test_stats_batched.py). Its own sampler loops in Python over the differences once
    per batch, so its time grows with the square of n; this one costs O(resamples · n).

    Not computable (nan): fewer than two differences. Every difference 0 → 1.0."""
    d = as_array(differences)
    if d.size < 2:
        return math.nan
    if np.all(d == 0):
        return 1.0
    observed = float(d.mean())
    exact = d.size < 63 and 2**d.size <= resamples
    if exact:
        patterns = np.arange(2**d.size, dtype=np.int64)
        flips = ((patterns[:, None] >> np.arange(d.size, dtype=np.int64)) & 1).astype(np.float64)
        null = (d.sum() - 2.0 * (flips @ d)) / d.size
    else:
        rng = np.random.default_rng(seed)
        null = np.empty(resamples)
        step = _resample_batch(d.size)
        for start in range(0, resamples, step):  # rows drawn in order from one generator
            rows = min(step, resamples - start)
            null[start : start + rows] = (d.sum() - 2.0 * (_random_bits(rng, rows, d.size) @ d)) / d.size
    return _permutation_p(null, observed, exact, alternative)


def _random_bits(rng: np.random.Generator, rows: int, n: int) -> NDArray[np.uint8]:
    """A (rows, n) array of fair 0/1 bits, 32 from each 32-bit draw (a row takes ceil(n / 32) draws, so
    the rows do not depend on how many are drawn at once); little-endian on every machine."""
    words = rng.integers(0, 1 << 32, size=(rows, (n + 31) // 32), dtype=np.uint32).astype("<u4")
    return np.unpackbits(words.view(np.uint8), axis=1, count=n, bitorder="little")


def _permutation_p(null: FloatArray, observed: float, exact: bool, alternative: str) -> float:
    """scipy.stats.permutation_test's p-value from a null distribution: values within a relative
    100 ulp of the observed one count as equal to it; a sampled (not exact) null adds one to the
    count and to the number of resamples; two-sided is twice the smaller side, clipped to 1."""
    adjustment = 0 if exact else 1
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / (null.size + adjustment)
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / (null.size + adjustment)
    p = {"less": less, "greater": greater, "two-sided": 2 * min(less, greater)}[alternative]
    return float(min(max(p, 0.0), 1.0))


def stratified_bootstrap_sums(
    rows: Sequence[Sequence[float]] | FloatArray,
    strata: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    rng: np.random.Generator,
) -> FloatArray | None:
    """`resamples` bootstrap totals of rows drawn in strata (a stratified sample's design), Rao and
    Wu's rescaled bootstrap: in each stratum (sorted by name) of n rows, n − 1 drawn with replacement
    and their sum scaled by n / (n − 1), the strata's sums added. So a stratum total's bootstrap
    variance is the unbiased estimate of its sampling variance (drawing n of n would understate it by
    (n − 1) / n: a sixth in a stratum of six). Returns a (resamples, columns) array. Each stratum's
    draws come from `rng` in turn, `_resample_batch` rows at a time, so the result does not depend on
    the batch.

    Not computable: no rows → None. A stratum of one row has no spread to estimate: that row is
    added to every resample."""
    x = np.asarray(rows, dtype=np.float64)
    if x.size == 0 or x.ndim != 2 or len(strata) != x.shape[0]:
        return None
    totals = np.zeros((resamples, x.shape[1]))
    for name in sorted(set(strata)):
        members = x[np.fromiter((s == name for s in strata), dtype=bool, count=len(strata))]
        m = members.shape[0]
        if m == 1:
            totals += members[0]
            continue
        step = _resample_batch((m - 1) * x.shape[1])
        for start in range(0, resamples, step):
            count = min(step, resamples - start)
            picked = rng.integers(0, m, size=(count, m - 1))
            totals[start : start + count] += members[picked].sum(axis=1) * (m / (m - 1))
    return totals
