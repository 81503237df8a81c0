"""Statistics against hand-worked values and scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from livemed.common import closed_form, stats


def test_bootstrap_mean_of_constant_and_tiny_samples() -> None:
    constant = stats.bootstrap_mean([0.4, 0.4, 0.4])
    assert (constant.estimate, constant.low, constant.high) == pytest.approx((0.4, 0.4, 0.4))
    single = stats.bootstrap_mean([0.7])  # one value: an estimate, no interval
    assert (single.estimate, math.isnan(single.low), math.isnan(single.high)) == (0.7, True, True)
    empty = stats.bootstrap_mean([])
    assert math.isnan(empty.estimate)
    assert math.isnan(empty.low)


def test_bootstrap_mean_matches_the_normal_interval_on_a_large_sample() -> None:
    x = np.random.default_rng(1).normal(0.6, 0.1, size=400)
    interval = stats.bootstrap_mean(x, resamples=2000, seed=3)
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert interval.estimate == pytest.approx(x.mean())
    assert interval.low == pytest.approx(x.mean() - half, abs=0.002)
    assert interval.high == pytest.approx(x.mean() + half, abs=0.002)


def test_bootstrap_is_seeded() -> None:
    x = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2]
    assert stats.bootstrap_mean(x, seed=7) == stats.bootstrap_mean(x, seed=7)
    assert stats.bootstrap_mean(x, seed=7) != stats.bootstrap_mean(x, seed=8)


def test_bootstrap_diff_and_full_minus_subset_estimates() -> None:
    diff = stats.bootstrap_diff([0.9, 0.8, 0.7], [0.2, 0.3, 0.1])
    assert diff.estimate == pytest.approx(0.6)
    assert diff.low <= diff.estimate <= diff.high
    assert diff.excludes_zero()
    # full mean 0.5, subset (last two) mean 0.0 -> 0.5
    values, subset = [1.0, 0.8, 0.2, 0.0], [False, False, True, True]
    full = stats.bootstrap_full_minus_subset(values, subset, resamples=1000)
    assert full.estimate == pytest.approx(0.5 - 0.1)
    # = share outside the subset (1/2) times the pre − post interval, resampled with the same seed
    split = stats.bootstrap_diff([1.0, 0.8], [0.2, 0.0], resamples=1000)
    assert (full.low, full.high) == pytest.approx((split.low / 2, split.high / 2))
    assert full.low <= full.estimate <= full.high


def test_one_sided_tests_on_a_hand_worked_example() -> None:
    # pre = [3, 4, 5], post = [1, 2]: of the C(5,2) = 10 equally likely splits only the observed one
    # puts all of the three largest values in `pre`, so the exact one-sided p-value is 1/10.
    assert closed_form.mann_whitney_greater([3, 4, 5], [1, 2]) == pytest.approx(0.1)
    assert stats.permutation_p_independent([3, 4, 5], [1, 2]) == pytest.approx(0.1)
    assert closed_form.mann_whitney_greater([1, 2], [3, 4, 5]) == pytest.approx(1.0)


def test_mann_whitney_agrees_with_scipy_with_ties() -> None:
    a, b = [0.5, 0.6, 0.6, 0.9, 1.0, 0.7], [0.2, 0.6, 0.4, 0.5, 0.3]
    expected = sps.mannwhitneyu(a, b, alternative="greater").pvalue
    assert closed_form.mann_whitney_greater(a, b) == pytest.approx(expected)
    assert closed_form.mann_whitney_greater([0.5, 0.5], [0.5]) == 1.0


def test_paired_sign_flip_permutation_p() -> None:
    # d = [1, 1, 1]: 2^3 = 8 sign patterns; |mean| = 1 for the all-plus and all-minus ones: p = 2/8.
    assert stats.permutation_p_paired([1.0, 1.0, 1.0]) == pytest.approx(0.25)
    assert stats.permutation_p_paired([0.0, 0.0]) == 1.0


def test_cliffs_delta_hand_worked_and_against_u() -> None:
    assert closed_form.cliffs_delta([3, 4, 5], [1, 2]) == 1.0
    # [1,2,3] vs [2,3,4]: 1 pair greater (3>2), 6 pairs less, 2 ties -> (1 - 6) / 9
    assert closed_form.cliffs_delta([1, 2, 3], [2, 3, 4]) == pytest.approx(-5 / 9)
    a, b = [0.1, 0.4, 0.4, 0.8], [0.3, 0.4, 0.2]
    u = sps.mannwhitneyu(a, b).statistic
    assert closed_form.cliffs_delta(a, b) == pytest.approx(2 * u / (len(a) * len(b)) - 1)


@pytest.mark.parametrize(
    ("p", "q"),
    [
        ([0.01, 0.04, 0.03, 0.005], [0.02, 0.04, 0.04, 0.02]),
        ([0.05, 0.5], [0.1, 0.5]),
        ([0.2], [0.2]),
        ([0.01, 0.02, 0.03], [0.03, 0.03, 0.03]),
    ],
)
def test_benjamini_hochberg_table(p: list[float], q: list[float]) -> None:
    assert closed_form.benjamini_hochberg(p) == pytest.approx(q)


def test_benjamini_hochberg_skips_nan() -> None:
    q = closed_form.benjamini_hochberg([math.nan, 0.01, 0.04])
    assert math.isnan(q[0])
    assert q[1:] == pytest.approx([0.02, 0.04])
