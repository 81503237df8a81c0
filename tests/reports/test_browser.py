"""The report in headless Chromium: loads cleanly, shows the leaderboard, never runs harvested script.

Needs Debian's `chromium` (or $LIVEMED_CHROMIUM) and the `playwright` Python package (dev extra), which
drives the installed browser: no browser download. Screenshots go to test-artifacts/ (gitignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.reports.build import ReportData
from livemed.reports.charts import axes_chart
from livemed.reports.html import render_html, write_report
from tests.conftest import REPO_ROOT
from tests.reports.browser import opened_report

pytestmark = pytest.mark.browser

ARTIFACTS = REPO_ROOT / "test-artifacts"


def test_report_in_headless_chromium(report_data: ReportData, tmp_path: Path) -> None:
    path = write_report(report_data, tmp_path / "report.html")
    ARTIFACTS.mkdir(exist_ok=True)
    with opened_report(path) as page:
        page.screenshot(path=str(ARTIFACTS / "report-top.png"))

        assert page.title() == "Study <b>42</b>"
        rows = page.locator("#leaderboard-table tbody tr")
        assert rows.count() == len(report_data.leaderboard)
        assert rows.first.locator("td.model").inner_text() == report_data.leaderboard[0].model
        assert page.locator("#leaderboard-table").is_visible()

        page.fill("#case-filter", "(case 0)")
        visible = page.locator("#case-list > details.case:visible")
        assert visible.count() == 1
        case = visible.first
        case.evaluate("el => { el.open = true; el.querySelectorAll('details').forEach(d => d.open = true); }")
        text = case.inner_text()
        assert "<script>window.__pwned = 1; document.title = 'pwned'</script>" in text
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.title() != "pwned"
        case.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "report-case.png"))
        page.fill("#case-filter", "")
        assert page.locator("#case-list > details.case:visible").count() == len(report_data.cases)


INJECTED = '<script>window.__pwned = 1</script><svg onload="window.__pwned2 = 1"></svg>'


def test_a_script_that_escaped_escaping_would_not_run(report_data: ReportData, tmp_path: Path) -> None:
    # A copy of the report with markup put in as if an escaping bug let harvested text through as is:
    # the Content-Security-Policy runs only the page's own script (by its hash), never this one.
    html = render_html(report_data)
    assert html.count("</footer>") == 1
    path = tmp_path / "injected.html"
    path.write_text(html.replace("</footer>", "</footer>" + INJECTED), encoding="utf-8")
    errors: list[str] = []
    with opened_report(path, errors=errors) as page:  # the page's own script ran: the page is ready
        assert page.locator("#leaderboard-table tbody tr").count() == len(report_data.leaderboard)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("typeof window.__pwned2") == "undefined"
    assert errors, "the blocked scripts should be reported as CSP violations"
    assert all("Content Security Policy" in e for e in errors), errors


HEALTHBENCH_AXES = [
    "accuracy",
    "completeness",
    "context_awareness",
    "communication_quality",
    "instruction_following",
]


def test_axis_labels_of_the_heat_map_never_overlap(report_data: ReportData, tmp_path: Path) -> None:
    for row in report_data.leaderboard:  # HealthBench's five axes, the longest names a report meets
        row.per_axis.clear()
        row.per_axis.update({axis: 0.5 for axis in HEALTHBENCH_AXES})
    report_data.charts["axes"] = axes_chart(report_data.leaderboard)
    path = write_report(report_data, tmp_path / "report.html")
    with opened_report(path) as page:
        boxes = page.eval_on_selector_all(
            "text.axis-label",
            "els => els.map(e => { const b = e.getBBox(); "
            "return [e.textContent, b.x, b.y, b.width, b.height] })",
        )
    for i, (text, x, y, w, h) in enumerate(boxes):
        for other, x2, y2, w2, h2 in boxes[i + 1 :]:
            apart = x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y
            assert apart, f"{text!r} overlaps {other!r}"
    assert {text for text, *_ in boxes} >= {"accuracy", "completeness", "communication", "quality"}  # wrapped
