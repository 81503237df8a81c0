"""Batched resamples (bounded memory) give exactly the unbatched results under a seed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sp

from livemed.common import stats
from livemed.score import formula as S

RNG = np.random.default_rng(11)
X = RNG.normal(0.5, 0.3, 700)
Y = RNG.normal(0.45, 0.3, 700)


def _all_results() -> list[object]:
    mask = np.arange(X.size) % 3 == 0
    return [
        stats.bootstrap_mean(X, resamples=1500, seed=3),
        stats.bootstrap_mean(X, resamples=1500, seed=3, convention="healthbench"),
        stats.bootstrap_diff(X, Y[:400], resamples=1500, seed=4),
        stats.bootstrap_paired_diff(X, Y, resamples=1500, seed=5, convention="healthbench"),
        stats.bootstrap_full_minus_subset(X, mask, resamples=1500, seed=6),
        stats.permutation_p_independent(X[:300], Y[:300], resamples=1500, seed=7),
        stats.permutation_p_paired(X - Y, resamples=1500, seed=8),
        stats.bootstrap(list(X), "healthbench", resamples=1500, seed=9),
        _stratified_sums(),
    ]


def _stratified_sums() -> list[list[float]]:
    rows = np.stack([X, Y], axis=1)
    strata = ["a" if i % 4 else "b" for i in range(X.size)]
    sums = stats.stratified_bootstrap_sums(rows, strata, resamples=300, rng=np.random.default_rng(10))
    assert sums is not None
    return [list(row) for row in sums.tolist()]


def test_batched_statistics_equal_unbatched_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "BATCH_VALUES", 1 << 40)  # every resample in one call: unbatched
    assert stats._resample_batch(X.size) > 1500
    whole = _all_results()
    monkeypatch.setattr(stats, "BATCH_VALUES", 7 * X.size + 5)  # batches of a few resamples
    assert stats._resample_batch(X.size) == 7
    assert _all_results() == whole


def test_the_batch_bounds_the_values_held_at_once() -> None:
    assert stats._resample_batch(10) * 10 <= stats.BATCH_VALUES
    assert stats._resample_batch(650_000) * 650_000 <= max(stats.BATCH_VALUES, 650_000)
    assert stats._resample_batch(10**9) == 1  # never zero


@pytest.mark.parametrize("n", [2, 3, 5, 8, 12])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_sign_flip_p_values_equal_scipys(n: int, alternative: str) -> None:
    d = np.round(RNG.normal(0.1, 0.3, n), 2)  # rounded: ties between sign patterns, as real scores have
    ours = stats.permutation_p_paired(d, alternative=alternative, resamples=5000)
    scipys = sp.permutation_test(
        (d,), np.mean, permutation_type="samples", alternative=alternative, n_resamples=5000, vectorized=True
    ).pvalue
    assert 2**n <= 5000
    assert ours == pytest.approx(float(scipys), abs=1e-12)


@pytest.mark.parametrize("shift", [0.0, 0.02, 0.05])
def test_sampled_sign_flip_p_values_agree_with_scipys(shift: float) -> None:
    d = RNG.normal(shift, 0.3, 200)
    ours = stats.permutation_p_paired(d, resamples=5000, seed=1)
    scipys = float(
        sp.permutation_test(
            (d,),
            np.mean,
            permutation_type="samples",
            n_resamples=5000,
            vectorized=True,
            rng=np.random.default_rng(1),
        ).pvalue
    )
    # two Monte Carlo estimates of one p-value: within 4 standard errors of 5,000 draws each
    assert abs(ours - scipys) <= 4 * np.sqrt(2 * scipys * (1 - scipys) / 5000) + 1e-3
    assert 1 / 5001 <= ours <= 1.0


def test_sampled_sign_flip_p_value_is_never_zero_and_sees_a_clear_shift() -> None:
    d = RNG.normal(0.3, 0.1, 500)  # every resampled mean is far below the observed one
    assert stats.permutation_p_paired(d, resamples=999, seed=2) == pytest.approx(2 / 1000)
    assert stats.permutation_p_paired(d, alternative="greater", resamples=999, seed=2) == pytest.approx(
        1 / 1000
    )
    assert stats.permutation_p_paired(d, alternative="less", resamples=999, seed=2) == 1.0


def test_sign_flip_bits_are_fair_and_do_not_depend_on_the_batch() -> None:
    whole = stats._random_bits(np.random.default_rng(5), 10, 77)
    rng = np.random.default_rng(5)
    parts = np.vstack([stats._random_bits(rng, 3, 77), stats._random_bits(rng, 7, 77)])
    assert whole.shape == (10, 77)
    assert set(np.unique(whole)) <= {0, 1}
    assert np.array_equal(whole, parts)
    many = stats._random_bits(np.random.default_rng(6), 200, 1000)
    assert abs(many.mean() - 0.5) < 0.01


def _scipy_percentile(samples: tuple[np.ndarray, ...], statistic, seed: int, paired: bool = False):  # type: ignore[no-untyped-def]
    ci = sp.bootstrap(
        samples, statistic, n_resamples=1500, method="percentile", vectorized=True, paired=paired,
        rng=np.random.default_rng(seed),
    ).confidence_interval  # fmt: skip
    return float(ci.low), float(ci.high)


@pytest.mark.parametrize("convention", ["livemed", "healthbench"])
def test_percentile_intervals_equal_scipys_under_the_same_generator(convention: str) -> None:
    x = RNG.normal(0.9, 0.3, 300)  # partly above 1: healthbench clips some resampled means

    def finished(v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(stats.finish_means(np.mean(v, axis=axis), convention))

    ours = stats.bootstrap_mean(x, resamples=1500, seed=3, convention=convention)
    assert (ours.low, ours.high) == pytest.approx(_scipy_percentile((x,), finished, 3), rel=1e-12, abs=1e-15)
    a, b = x, RNG.normal(0.8, 0.3, 300)

    def diff(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(finished(u, axis) - finished(v, axis))

    paired = stats.bootstrap_paired_diff(a, b, resamples=1500, seed=4, convention=convention)
    assert (paired.low, paired.high) == pytest.approx(
        _scipy_percentile((a, b), diff, 4, paired=True), rel=1e-12, abs=1e-15
    )


@pytest.mark.parametrize(
    "values", [list(X[:50]), [0.25, 0.75], [0.4] * 9, [0.0, 1.0, 1.0, 0.5, 1.2, -0.1]], ids=str
)
@pytest.mark.parametrize("convention", ["livemed", "healthbench"])
def test_summarize_gives_the_leaderboards_interval(values: list[float], convention: S.Convention) -> None:
    summary = stats.summarize(values, convention, resamples=800, seed=2)
    interval = stats.bootstrap_mean(values, resamples=800, seed=2, convention=convention)
    assert summary is not None
    assert (summary.mean, summary.ci_low, summary.ci_high) == (interval.estimate, interval.low, interval.high)
    assert summary.bootstrap_std is not None
    assert summary.bootstrap_std >= 0


def test_intervals_and_the_sign_flip_test_need_no_scipy() -> None:
    code = (
        "import sys\n"
        "from livemed.common import stats\n"
        "stats.bootstrap_mean([0.1, 0.5, 0.9], resamples=50)\n"
        "stats.bootstrap_paired_diff([0.1, 0.5, 0.9], [0.2, 0.2, 0.4], resamples=50)\n"
        "stats.bootstrap_diff([0.1, 0.5, 0.9], [0.2, 0.4], resamples=50)\n"
        "stats.permutation_p_paired([0.1, -0.5, 0.9, 0.3] * 10, resamples=50)\n"
        "stats.summarize([0.1, 0.5, 0.9], resamples=50)\n"
        "print('scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
