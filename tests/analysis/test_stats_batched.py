"""Batched resamples (bounded memory) give exactly the unbatched results under a seed."""

from __future__ import annotations

import numpy as np
import pytest

from livemed.analysis import stats
from livemed.grading import score as S

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
        S.bootstrap(list(X), "healthbench", resamples=1500, seed=9),
    ]


def test_batched_statistics_equal_unbatched_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "BATCH_VALUES", 1 << 40)  # every resample in one call: unbatched
    monkeypatch.setattr(S, "BOOTSTRAP_BATCH_VALUES", 1 << 40)
    assert stats._resample_batch(X.size) > 1500
    whole = _all_results()
    monkeypatch.setattr(stats, "BATCH_VALUES", 7 * X.size + 5)  # batches of a few resamples
    monkeypatch.setattr(S, "BOOTSTRAP_BATCH_VALUES", 7 * X.size + 5)
    assert stats._resample_batch(X.size) == 7
    assert _all_results() == whole


def test_the_batch_bounds_the_values_held_at_once() -> None:
    assert stats._resample_batch(10) * 10 <= stats.BATCH_VALUES
    assert stats._resample_batch(650_000) * 650_000 <= max(stats.BATCH_VALUES, 650_000)
    assert stats._resample_batch(10**9) == 1  # never zero
