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
    assert trend[0].ci_low <= 0.5 <= trend[0].ci_high
    assert months(trend) == ["2024-01", "2024-02"]
