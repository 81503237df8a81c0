"""Every public statistic of `common.stats` and `common.closed_form` on samples of 0, 1 and 2 values
(and all-equal ones): its documented "not computable" value (nan) or a hand-worked number, never an
exception or a warning."""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from livemed.common import closed_form, stats

NAN = math.nan
Case = tuple[str, Callable[[], Any], Any]


def _interval(estimate: float, low: float, high: float) -> tuple[float, float, float]:
    return (estimate, low, high)


def _summary(summary: stats.Summary | None) -> tuple[Any, ...] | None:
    if summary is None:
        return None
    return (summary.mean, summary.n, summary.ci_low, summary.ci_high, summary.bootstrap_std)


def _ranked(summary: stats.Summary) -> tuple[Any, ...]:
    return (summary.mean, summary.n, summary.ci_low, summary.ci_high)


THREE = {"b": [0.7], "a": [0.2, 0.6], "c": [0.7]}
RANKED = [(0.7, 1, None, None), (0.7, 1, None, None), (0.4, 2, 0.2, 0.6)]


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _bounds(draws: Any) -> tuple[float, float]:
    """The smallest and largest draw: items i (mean 0.5) and j (1.0) drawn twice each give 0.5 … 1.0."""
    return (float(np.min(draws)), float(np.max(draws)))


CASES: list[Case] = [
    # proportion: k of n with Wilson's interval; n = 0 has no value and no interval (None); one item has
    # the interval z²/(1 + z²) wide from the end it lies at: 1 of 1 → low z²... = 0.2065…
    ("proportion", lambda: math.nan if closed_form.proportion(0, 0).value is None else 0.0, NAN),
    ("proportion", lambda: closed_form.proportion(1, 1).low, 1 / (1 + 1.959963984540054**2)),
    # bimodality_coefficient: needs four values, not all equal; [0, 0, 1, 1]: skewness 0, bias-corrected
    # excess kurtosis ((n+1)(−2) + 6)(n−1)/((n−2)(n−3)) = −6 → 1 / (−6 + 3·9/2) = 2/15
    ("bimodality_coefficient", lambda: closed_form.bimodality_coefficient([]), NAN),
    ("bimodality_coefficient", lambda: closed_form.bimodality_coefficient([0.0, 1.0, 1.0]), NAN),
    ("bimodality_coefficient", lambda: closed_form.bimodality_coefficient([0.4] * 4), NAN),
    ("bimodality_coefficient", lambda: closed_form.bimodality_coefficient([0.0, 0.0, 1.0, 1.0]), 2 / 15),
    # bootstrap_mean: estimate needs 1 value, bounds 2; constant → zero width
    ("bootstrap_mean", lambda: stats.bootstrap_mean([]), _interval(NAN, NAN, NAN)),
    ("bootstrap_mean", lambda: stats.bootstrap_mean([0.7]), _interval(0.7, NAN, NAN)),
    (
        "bootstrap_mean",
        lambda: stats.bootstrap_mean([1.5], convention="healthbench"),
        _interval(1.0, NAN, NAN),
    ),
    # two values: resampled means are 0.2, 0.4, 0.6 with chances 1/4, 1/2, 1/4 → the 2.5/97.5 percentiles
    ("bootstrap_mean", lambda: stats.bootstrap_mean([0.2, 0.6]), _interval(0.4, 0.2, 0.6)),
    ("bootstrap_mean", lambda: stats.bootstrap_mean([0.4, 0.4]), _interval(0.4, 0.4, 0.4)),
    # bootstrap_diff: independent samples
    ("bootstrap_diff", lambda: stats.bootstrap_diff([], [0.5]), _interval(NAN, NAN, NAN)),
    ("bootstrap_diff", lambda: stats.bootstrap_diff([0.9], [0.2]), _interval(0.7, NAN, NAN)),
    ("bootstrap_diff", lambda: stats.bootstrap_diff([0.9], [0.2, 0.4]), _interval(0.6, NAN, NAN)),
    # x means 0.7/0.8/0.9, y means 0.2/0.3/0.4: the extremes 0.3 and 0.7 each have chance 1/16 > 2.5 %
    ("bootstrap_diff", lambda: stats.bootstrap_diff([0.9, 0.7], [0.2, 0.4]), _interval(0.5, 0.3, 0.7)),
    ("bootstrap_diff", lambda: stats.bootstrap_diff([0.5, 0.5], [0.5, 0.5]), _interval(0.0, 0.0, 0.0)),
    # bootstrap_paired_diff: one pair has no interval (it used to claim a zero-width one)
    ("bootstrap_paired_diff", lambda: stats.bootstrap_paired_diff([], []), _interval(NAN, NAN, NAN)),
    ("bootstrap_paired_diff", lambda: stats.bootstrap_paired_diff([0.9], [0.2]), _interval(0.7, NAN, NAN)),
    (
        "bootstrap_paired_diff",
        lambda: stats.bootstrap_paired_diff([1.0, 0.0], [0.0, 0.0]),
        _interval(0.5, 0.0, 1.0),
    ),
    (
        "bootstrap_paired_diff",
        lambda: stats.bootstrap_paired_diff([0.6, 0.6], [0.1, 0.1]),
        _interval(0.5, 0.5, 0.5),
    ),
    # bootstrap_full_minus_subset
    (
        "bootstrap_full_minus_subset",
        lambda: stats.bootstrap_full_minus_subset([], []),
        _interval(NAN, NAN, NAN),
    ),
    (
        "bootstrap_full_minus_subset",
        lambda: stats.bootstrap_full_minus_subset([0.3], [False]),
        _interval(NAN, NAN, NAN),
    ),
    (
        "bootstrap_full_minus_subset",
        lambda: stats.bootstrap_full_minus_subset([0.3], [True]),
        _interval(0.0, 0.0, 0.0),
    ),
    # mean(all) 0.5 − mean(subset) 0.1; the rest and the subset have one value each: no interval
    (
        "bootstrap_full_minus_subset",
        lambda: stats.bootstrap_full_minus_subset([0.9, 0.1], [False, True]),
        _interval(0.4, NAN, NAN),
    ),
    # two and two: half (the rest's share) of bootstrap_diff([0.9, 0.7], [0.2, 0.4])'s bounds 0.3 and 0.7
    (
        "bootstrap_full_minus_subset",
        lambda: stats.bootstrap_full_minus_subset([0.9, 0.7, 0.2, 0.4], [False, False, True, True]),
        _interval(0.25, 0.15, 0.35),
    ),
    # permutation_p_independent: scipy needs two values per sample
    ("permutation_p_independent", lambda: stats.permutation_p_independent([], [0.5]), NAN),
    ("permutation_p_independent", lambda: stats.permutation_p_independent([0.9], [0.2]), NAN),
    ("permutation_p_independent", lambda: stats.permutation_p_independent([0.9], [0.2, 0.4]), NAN),
    ("permutation_p_independent", lambda: stats.permutation_p_independent([0.5], [0.5]), NAN),
    # C(4, 2) = 6 equally likely splits; only the observed one puts both large values in x
    ("permutation_p_independent", lambda: stats.permutation_p_independent([0.9, 0.8], [0.2, 0.1]), 1 / 6),
    ("permutation_p_independent", lambda: stats.permutation_p_independent([0.5, 0.5], [0.5, 0.5]), 1.0),
    # permutation_p_paired
    ("permutation_p_paired", lambda: stats.permutation_p_paired([]), NAN),
    ("permutation_p_paired", lambda: stats.permutation_p_paired([0.3]), NAN),
    ("permutation_p_paired", lambda: stats.permutation_p_paired([0.0]), NAN),
    # signs of [0.2, 0.4]: means 0.3, 0.1, −0.1, −0.3; two of four reach |0.3|
    ("permutation_p_paired", lambda: stats.permutation_p_paired([0.2, 0.4]), 0.5),
    ("permutation_p_paired", lambda: stats.permutation_p_paired([0.0, 0.0]), 1.0),
    # mann_whitney_greater: exact for tiny samples
    ("mann_whitney_greater", lambda: closed_form.mann_whitney_greater([], [0.5]), NAN),
    ("mann_whitney_greater", lambda: closed_form.mann_whitney_greater([0.9], [0.2]), 0.5),
    ("mann_whitney_greater", lambda: closed_form.mann_whitney_greater([0.2], [0.9]), 1.0),
    ("mann_whitney_greater", lambda: closed_form.mann_whitney_greater([0.5], [0.5]), 1.0),
    ("mann_whitney_greater", lambda: closed_form.mann_whitney_greater([0.9, 0.8], [0.2, 0.1]), 1 / 6),
    ("mann_whitney_greater", lambda: closed_form.mann_whitney_greater([0.5, 0.5], [0.5, 0.5]), 1.0),
    # cliffs_delta
    ("cliffs_delta", lambda: closed_form.cliffs_delta([], [0.5]), NAN),
    ("cliffs_delta", lambda: closed_form.cliffs_delta([0.9], [0.2]), 1.0),
    ("cliffs_delta", lambda: closed_form.cliffs_delta([0.5], [0.5]), 0.0),
    ("cliffs_delta", lambda: closed_form.cliffs_delta([0.9, 0.1], [0.5, 0.5]), 0.0),
    ("cliffs_delta", lambda: closed_form.cliffs_delta([0.9, 0.8], [0.2, 0.1]), 1.0),
    # spearman: three pairs, two distinct values on each side
    ("spearman", lambda: closed_form.spearman([1, 2], [1, 2]), (NAN, NAN)),
    ("spearman", lambda: closed_form.spearman([1, 2, 3], [0.5, 0.5, 0.5]), (NAN, NAN)),
    ("spearman", lambda: closed_form.spearman([1, 2, 3], [1, 2]), (NAN, NAN)),
    ("spearman", lambda: closed_form.spearman([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4])[0], 1.0),
    # benjamini_hochberg
    ("benjamini_hochberg", lambda: closed_form.benjamini_hochberg([]), []),
    ("benjamini_hochberg", lambda: closed_form.benjamini_hochberg([0.04]), [0.04]),
    ("benjamini_hochberg", lambda: closed_form.benjamini_hochberg([NAN]), [NAN]),
    ("benjamini_hochberg", lambda: closed_form.benjamini_hochberg([0.01, 0.04]), [0.02, 0.04]),
    ("benjamini_hochberg", lambda: closed_form.benjamini_hochberg([0.03, 0.03]), [0.03, 0.03]),
    # the score conventions: the mean, the healthbench convention's clip; no values is an error there
    ("finish_means", lambda: stats.finish_means(NAN, "healthbench"), NAN),
    ("finish_means", lambda: stats.finish_means(1.5, "healthbench"), 1.0),
    ("finish_means", lambda: stats.finish_means(1.5), 1.5),
    ("aggregate", lambda: stats.aggregate([0.7]), 0.7),
    ("aggregate", lambda: stats.aggregate([1.5, 0.9], "healthbench"), 1.0),
    ("bootstrap", lambda: stats.bootstrap([0.7]), (NAN, NAN, NAN)),
    ("bootstrap", lambda: stats.bootstrap([0.2, 0.6])[:2], (0.2, 0.6)),
    ("bootstrap", lambda: stats.bootstrap([0.4, 0.4]), (0.4, 0.4, 0.0)),
    ("summarize", lambda: stats.summarize([]), None),
    ("summarize", lambda: stats.summarize([None]), None),
    ("summarize", lambda: _summary(stats.summarize([0.7, None])), (0.7, 1, None, None, None)),
    ("summarize", lambda: _summary(stats.summarize([0.4, 0.4])), (0.4, 2, 0.4, 0.4, 0.0)),
    ("rank_models", lambda: stats.rank_models({}), []),
    # best mean first, ties by name; one value has no interval (the spread, ~√0.02, is sampled: left out)
    ("rank_models", lambda: [m for m, _ in stats.rank_models(THREE)] == ["b", "c", "a"], True),
    ("rank_models", lambda: [_ranked(s) for _, s in stats.rank_models(THREE)], RANKED),
    ("cluster_bootstrap", lambda: stats.cluster_bootstrap([], [], resamples=10, rng=_rng()), None),
    (
        "cluster_bootstrap",
        lambda: stats.cluster_bootstrap([1.0, 0.0], ["i", "i"], resamples=10, rng=_rng()),
        None,
    ),
    (
        "cluster_bootstrap",
        lambda: _bounds(stats.cluster_bootstrap([1.0, 0.0, 1.0], ["i", "i", "j"], resamples=50, rng=_rng())),
        (0.5, 1.0),
    ),
    # stratified_bootstrap_sums: rows resampled within their strata, totals per resample
    ("stratified_bootstrap_sums", lambda: stats.stratified_bootstrap_sums([], [], rng=_rng()), None),
    (
        "stratified_bootstrap_sums",
        lambda: _bounds(stats.stratified_bootstrap_sums([[2.0]], ["a"], resamples=10, rng=_rng())),
        (2.0, 2.0),
    ),
    (  # stratum a: one of its two rows drawn, scaled by 2 (0 or 2); b's one row always 5
        "stratified_bootstrap_sums",
        lambda: _bounds(
            stats.stratified_bootstrap_sums([[1.0], [0.0], [5.0]], ["a", "a", "b"], resamples=50, rng=_rng())
        ),
        (5.0, 7.0),
    ),
    # helpers
    ("as_array", lambda: stats.as_array([]).tolist(), []),
    ("as_array", lambda: stats.as_array([1]).tolist(), [1.0]),
    ("finite_or_none", lambda: stats.finite_or_none(NAN), None),
    ("finite_or_none", lambda: stats.finite_or_none(math.inf), None),
    ("finite_or_none", lambda: stats.finite_or_none(0.25), 0.25),
    ("Interval.excludes_zero", lambda: stats.NAN_INTERVAL.excludes_zero(), False),
    ("Interval.excludes_zero", lambda: stats.Interval(0.7, NAN, NAN).excludes_zero(), False),
    ("Interval.excludes_zero", lambda: stats.Interval(0.5, 0.1, 0.9).excludes_zero(), True),
    ("Interval.excludes_zero", lambda: stats.Interval(0.0, 0.0, 0.0).excludes_zero(), False),
]


def _same(got: Any, expected: Any) -> bool:
    if isinstance(got, stats.Interval):
        got = (got.estimate, got.low, got.high)
    if isinstance(expected, tuple | list):
        return len(got) == len(expected) and all(_same(g, e) for g, e in zip(got, expected, strict=True))
    if expected is None or isinstance(expected, bool):
        return got is expected
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    return isinstance(got, float | int) and got == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("name", "call", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_tiny_samples_give_the_documented_value(name: str, call: Callable[[], Any], expected: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from a mean of nothing, no scipy warning
        got = call()
    assert _same(got, expected), f"{name}: {got!r} != {expected!r}"


MODULES = (stats, closed_form)  # the resampled statistics and the closed-form ones


def _public_functions(module: ModuleType) -> set[str]:
    """The public functions `module` defines (not those it imports)."""
    return {
        name
        for name, obj in vars(module).items()
        if not name.startswith("_") and inspect.isfunction(obj) and obj.__module__ == module.__name__
    }


def _defined(name: str) -> Any:
    """The public function `name` (or `Interval.method`) from the one module that defines it."""
    if name.startswith("Interval."):
        return getattr(stats.Interval, name.removeprefix("Interval."))
    (module,) = (m for m in MODULES if name in _public_functions(m))
    return getattr(module, name)


def test_the_table_covers_every_public_statistic() -> None:
    per_module = [_public_functions(module) for module in MODULES]
    assert all(per_module), "a module of statistics defines no public function: is MODULES stale?"
    assert not set.intersection(*per_module), "one name defined in both modules"
    public = set.union(*per_module)
    public |= {f"Interval.{m}" for m in vars(stats.Interval) if not m.startswith("_")}
    assert public - {"Interval.estimate", "Interval.low", "Interval.high"} <= {c[0] for c in CASES}


def test_every_public_statistic_documents_its_not_computable_value() -> None:
    for name in {c[0] for c in CASES} - {"as_array", "finite_or_none", "Interval.excludes_zero"}:
        doc = inspect.getdoc(_defined(name)) or ""
        assert "ot computable" in doc or "No p-values" in doc, name


def test_no_value_is_an_exception_on_a_single_shared_value() -> None:
    # what the paired comparison of two models sharing one case computes
    d = np.array([0.25])
    assert math.isnan(stats.permutation_p_paired(d))
    assert math.isnan(stats.bootstrap_mean(d).low)
