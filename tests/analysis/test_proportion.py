"""The Wilson interval of a proportion: scipy's, with the textbook formula as an independent check."""

from __future__ import annotations

import math

import pytest

from livemed.common.closed_form import proportion
from livemed.common.stats import MIN_N


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(0, 5), (5, 5), (14, 20), (400, 1000), (1, 30)])
def test_proportion_is_wilsons_interval(k: int, n: int) -> None:
    got = proportion(k, n)
    low, high = _wilson(k, n)
    assert got.value == k / n
    assert (got.low, got.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))  # type: ignore[comparison-overlap]
    assert got.small is (n < MIN_N)


def test_no_items_no_interval_and_bad_counts_refused() -> None:
    empty = proportion(0, 0)
    assert (empty.value, empty.low, empty.high, empty.small) == (None, None, None, True)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        proportion(3, 2)
