"""The report at 420 px (nothing wider than the screen outside a scroll box) and the case browser's
sort by score, coloured score pills and "no cases match" message, in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.reports.build import ReportData
from livemed.reports.html import write_report
from tests.reports.browser import opened_report

pytestmark = pytest.mark.browser

OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = el => ["auto", "scroll", "hidden"].includes(getComputedStyle(el).overflowX);
  const bad = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if ((r.width === 0 && r.height === 0) || (r.right <= width + 1 && r.left >= -1)) continue;
    let up = el.parentElement;
    while (up && up !== document.body && !scrolls(up)) up = up.parentElement;
    if (!up || up === document.body) bad.push(`${el.tagName}.${el.className} ${Math.round(r.right)}px`);
  }
  return {bad: bad.slice(0, 10), page: document.documentElement.scrollWidth, width};
}"""

OPEN_ALL = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def test_at_420_px_nothing_overflows_outside_a_scroll_box(report_data: ReportData, tmp_path: Path) -> None:
    path = write_report(report_data, tmp_path / "report.html")
    with opened_report(path) as page:
        page.set_viewport_size({"width": 420, "height": 900})
        page.evaluate(OPEN_ALL)
        found = page.evaluate(OVERFLOWING)
        assert found["bad"] == []
        assert found["page"] <= found["width"]
        assert page.locator("table.data").count() > 3  # the check covered the tables


def scores_in_order(page: object) -> list[float]:
    values: list[str | None] = page.eval_on_selector_all(  # type: ignore[attr-defined]
        "#case-list > details.case", "els => els.map(el => el.getAttribute('data-score'))"
    )
    return [float(v) for v in values if v is not None]


def test_cases_sort_by_score_with_coloured_pills_and_a_no_match_message(
    report_data: ReportData, tmp_path: Path
) -> None:
    path = write_report(report_data, tmp_path / "report.html")
    with opened_report(path) as page:
        recent = scores_in_order(page)
        assert len(recent) > 2
        assert recent != sorted(recent)  # the default order is by date, not by score
        page.select_option("#case-sort", "score-asc")
        assert scores_in_order(page) == sorted(recent)
        page.select_option("#case-sort", "score-desc")
        assert scores_in_order(page) == sorted(recent, reverse=True)
        page.select_option("#case-sort", "recent")
        assert scores_in_order(page) == recent
        pills = page.locator("#case-list .chip")
        bands = {c for c in pills.evaluate_all("els => els.map(e => e.className)")}
        assert {"chip score-low", "chip score-high"} <= bands
        colours = pills.evaluate_all("els => [...new Set(els.map(e => getComputedStyle(e).backgroundColor))]")
        assert len(colours) >= 2
        assert page.locator("#case-none").is_hidden()
        page.fill("#case-filter", "no case says zzqx-nothing")
        assert page.locator("#case-list > details.case:visible").count() == 0
        assert page.locator("#case-none").is_visible()
        assert "No cases match" in page.locator("#case-none").inner_text()
        page.fill("#case-filter", "")
        assert page.locator("#case-none").is_hidden()
