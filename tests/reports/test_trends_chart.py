"""The trends chart: a real time axis (empty months are gaps), n under each month, cutoff markers."""

from __future__ import annotations

from datetime import date

from livemed.analysis.trends import TrendRow
from livemed.reports.charts import trends_chart


def _row(model: str, month: str, n: int = 1, mean: float = 0.5) -> TrendRow:
    return TrendRow(model=model, month=month, n=n, mean=mean, ci_low=None, ci_high=None)


ROWS = [_row("m/a", "2024-01", 2), _row("m/a", "2024-02", 3), _row("m/a", "2024-05", 1)]


def _circles(chart_rows: list[TrendRow]) -> list[float]:
    chart = trends_chart(chart_rows, ["m/a"])
    return [s.x for s in chart.shapes if s.kind == "circle"]


def test_months_are_spaced_by_date_and_an_empty_month_is_a_gap() -> None:
    chart = trends_chart(ROWS, ["m/a"])
    xs = [s.x for s in chart.shapes if s.kind == "circle"]
    assert len(xs) == 3
    step = xs[1] - xs[0]
    assert xs[2] - xs[1] == step * 3  # May is three months after February, not one step
    assert sum(s.kind == "polyline" for s in chart.shapes) == 2  # Jan–Feb, then May alone
    labels = {s.text for s in chart.shapes if s.kind == "text"}
    assert {"2024-01", "2024-03"} <= labels  # the empty March is on the axis


def test_n_is_shown_under_each_month_with_cases() -> None:
    chart = trends_chart(ROWS, ["m/a"])
    counts = [s.text for s in chart.shapes if s.kind == "text" and s.css == "n"]
    assert counts == ["2", "3", "1"]


def test_each_cutoff_is_marked_and_one_off_the_axis_is_listed() -> None:
    cutoffs = {"m/a": date(2024, 3, 31), "m/b": date(2030, 1, 1)}
    chart = trends_chart(ROWS, ["m/a"], cutoffs)
    marker = [s for s in chart.shapes if s.kind == "line" and s.css == "cutoff"]
    assert marker
    xs = _circles(ROWS)
    assert xs[1] < marker[0].x < xs[2]  # between February and May
    assert {s.x for s in marker} == {marker[0].x}  # one vertical line (drawn as dashes)
    texts = [s.text for s in chart.shapes if s.kind == "text"]
    assert "cutoff 2024-03-31: m/a" in texts
    assert any("off this axis" in t and "m/b (2030-01-01)" in t for t in texts)
    assert not [s for s in trends_chart(ROWS, ["m/a"]).shapes if s.css == "cutoff"]
