"""The numpy Spearman, skewness and kurtosis of `common.closed_form` give scipy's very floats.

`scores` and `leaderboard` no longer import `scipy.stats` (~1 CPU s) for them; these tests import it
to compare, under seeds, on the shapes the checks see (word counts against rubric scores: many ties),
on real data (K-QA answers' lengths against their statement counts) and on the degenerate inputs
(constant, tiny, nan)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sp

from livemed.common import closed_form


def _same(ours: float, theirs: float) -> bool:
    return (math.isnan(ours) and math.isnan(theirs)) or ours == theirs


def _scipy_moments(x: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant and tiny inputs; the values count
        return float(sp.skew(x, bias=False)), float(sp.kurtosis(x, bias=False))


def _scipy_spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = sp.spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)


def _sample(rng: np.random.Generator, shape: int, n: int) -> np.ndarray:
    """Values shaped like the checks' inputs: continuous, rubric scores k/P, piled at 0 and 1, word
    counts, and nearly constant (scipy's no-spread rule)."""
    if shape == 0:
        return rng.random(n)
    if shape == 1:
        return rng.integers(0, 7, n) / 6.0
    if shape == 2:
        return np.round(rng.beta(0.3, 0.3, n), 2)
    if shape == 3:
        return rng.integers(5, 400, n).astype(float)
    return rng.normal(5.0, 1e-9, n)


@pytest.mark.parametrize("shape", range(5))
def test_skewness_and_kurtosis_equal_scipy_under_seeds(shape: int) -> None:
    for seed in range(150):
        rng = np.random.default_rng(seed)
        x = _sample(rng, shape, int(rng.integers(1, 400 if seed % 2 else 8)))
        skew, kurt = _scipy_moments(x)
        assert _same(closed_form._skewness(x), skew), (shape, seed, x.size)
        assert _same(closed_form._excess_kurtosis(x), kurt), (shape, seed, x.size)


@pytest.mark.parametrize("shape", range(4))
def test_spearman_equals_scipy_under_seeds(shape: int) -> None:
    compared = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(3, 500 if seed % 2 else 9))
        x, y = _sample(rng, shape, n), np.round(rng.random(n), 1)
        if seed % 3 == 0:
            y = x * 0.5 + rng.random(n) * 0.2  # correlated: small p-values
        if np.all(x == x[0]) or np.all(y == y[0]):
            continue
        assert closed_form.spearman(x, y) == _scipy_spearman(x, y), (shape, seed, n)
        compared += 1
    assert compared > 100


def test_spearman_of_perfect_orders_equals_scipy() -> None:
    x = np.arange(10.0)
    for y in (x * 2, -x, x**3):
        assert closed_form.spearman(x, y) == _scipy_spearman(x, y)
    rho, p = closed_form.spearman(x, -x)
    assert rho == pytest.approx(-1.0)
    assert p == pytest.approx(0.0, abs=1e-12)


def test_average_ranks_share_ties() -> None:
    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0])
    assert list(closed_form._average_ranks(x)) == list(sp.rankdata(x)) == [5.0, 1.5, 5.0, 3.0, 5.0, 1.5]


def test_degenerate_inputs_as_before() -> None:
    nan = float("nan")
    # moments: constant → nan (no spread); nan anywhere → nan; empty → nan; scipy's uncorrected value
    # where the correction needs more values (two values for skew, up to three for kurtosis)
    for x in ([0.4] * 6, [1.0, nan, 2.0, 3.0], []):
        assert math.isnan(closed_form._skewness(x))
        assert math.isnan(closed_form._excess_kurtosis(x))
    for x in ([0.0, 1.0], [0.0, 1.0, 1.0], [2.0, 0.0, 1.0, 1.0]):
        skew, kurt = _scipy_moments(np.asarray(x))
        assert _same(closed_form._skewness(x), skew)
        assert _same(closed_form._excess_kurtosis(x), kurt)
    assert closed_form._excess_kurtosis([0.0, 1.0]) == -2.0
    # Spearman: fewer than three pairs, a constant side, unequal lengths or a nan → (nan, nan)
    for x, y in (([1, 2], [1, 2]), ([1, 2, 3], [5, 5, 5]), ([1, 2, 3], [1, 2]), ([1, nan, 3], [1, 2, 3])):  # type: ignore[assignment]
        assert all(math.isnan(v) for v in closed_form.spearman(x, y))
    assert all(math.isnan(v) for v in _scipy_spearman(np.array([1, nan, 3]), np.array([1, 2, 3])))
    # the bimodality coefficient: fewer than four values, constant, or a nan → nan
    for x in ([0.0, 1.0, 1.0], [0.3] * 30, [0.0, 1.0, nan, 1.0, 0.0]):
        assert math.isnan(closed_form.bimodality_coefficient(x))


def test_bimodality_coefficient_equals_the_scipy_formula() -> None:
    for seed in range(100):
        rng = np.random.default_rng(seed)
        x = _sample(rng, seed % 4, int(rng.integers(4, 300)))
        if np.all(x == x[0]):
            continue
        g, k = _scipy_moments(x)
        n = x.size
        assert closed_form.bimodality_coefficient(x) == (g * g + 1) / (
            k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))
        )


def test_spearman_and_moments_equal_scipy_on_k_qa(shared_data: Path) -> None:
    """Real answers: each K-QA physician answer's length in words against its number of must-have and
    nice-to-have statements (integers with many ties on both sides)."""
    lines = (shared_data / "k-qa" / "questions_w_answers.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    lengths = np.array([len(r["Free_form_answer"].split()) for r in rows], dtype=float)
    must = np.array([len(r["Must_have"]) for r in rows], dtype=float)
    nice = np.array([len(r["Nice_to_have"]) for r in rows], dtype=float)
    assert lengths.size > 100
    for other in (must, nice):
        assert closed_form.spearman(lengths, other) == _scipy_spearman(lengths, other)
    for x in (lengths, must, nice, must / np.maximum(1.0, must + nice)):
        skew, kurt = _scipy_moments(x)
        assert closed_form._skewness(x) == skew
        assert closed_form._excess_kurtosis(x) == kurt
