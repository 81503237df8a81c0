from __future__ import annotations

import pytest

from livemed.analysis.inputs import CaseScore
from livemed.analysis.trends import monthly, months
from tests.analysis.builders import rows


def test_monthly_means_and_counts() -> None:
    # days 0, 10, 20 are January 2024; days 31, 40 February; one undated case is left out
    data = rows("m/a", [1.0, 0.5, 0.0, 0.2, 0.4], days=[0, 10, 20, 31, 40])
    data += [CaseScore("m/a", "undated", 1.0, published=None)]
    data += rows("m/b", [0.3], days=[45])
    trend = monthly(data, resamples=1000)
    assert [(t.model, t.month, t.n) for t in trend] == [
        ("m/a", "2024-01", 3),
        ("m/a", "2024-02", 2),
        ("m/b", "2024-02", 1),
    ]
    assert [t.mean for t in trend] == pytest.approx([0.5, 0.3, 0.3])
    # three cases in January: fewer than MIN_N_INTERVAL, so a mean and n but no interval
    assert trend[0].ci_low is None
    assert trend[0].ci_high is None
    assert months(trend) == ["2024-01", "2024-02"]


def test_an_interval_only_from_the_minimum_n() -> None:
    from livemed.analysis.trends import MIN_N_INTERVAL

    values = [1.0, 0.0, 0.5, 0.25, 0.75, 0.6]
    few = monthly(rows("m/a", values[: MIN_N_INTERVAL - 1], days=list(range(MIN_N_INTERVAL - 1))))
    enough = monthly(rows("m/a", values[:MIN_N_INTERVAL], days=list(range(MIN_N_INTERVAL))))
    assert (few[0].n, few[0].ci_low, few[0].ci_high) == (MIN_N_INTERVAL - 1, None, None)
    assert enough[0].n == MIN_N_INTERVAL
    assert enough[0].ci_low is not None
    assert enough[0].ci_high is not None
    assert enough[0].ci_low < enough[0].mean < enough[0].ci_high


def test_month_range_keeps_the_empty_months() -> None:
    from datetime import date

    from livemed.analysis.trends import month_position, month_range

    trend = monthly(rows("m/a", [1.0, 0.5], days=[0, 100]), resamples=1000)  # January and April 2024
    assert months(trend) == ["2024-01", "2024-04"]
    assert month_range(trend) == ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert month_range([]) == []
    assert month_position(date(2024, 3, 1)) - month_position(date(2024, 1, 1)) == 2
