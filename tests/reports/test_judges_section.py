"""The report's judge section: `judges report`'s tables (every figure with its interval and count) and
Figures 1–2 as charts, readable in headless Chromium from 360 px to 1,920 px."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.judges.figures import SMALL
from livemed.records import Rejection
from livemed.reports.build import ReportData, build_report
from livemed.reports.html import render_html, write_report
from livemed.store import Store
from tests.judges.scripted import JUDGES, pairs, verdicts
from tests.reports.browser import opened_report
from tests.reports.conftest import FAST, registry
from tests.reports.test_readable_widths import WIDTHS, readability


@pytest.fixture
def judged(report_store: Store) -> ReportData:
    chosen = pairs("pico", 20, 6, seed=1) + pairs("medcalc", 20, 6, seed=3) + pairs("medqa", 40, 3, seed=2)
    chosen += pairs("pubmedqa", 30, 1) + pairs("medbullets", 4, 3)  # all five datasets: the widest tables
    for judge in ("fake/always-a", "fake/noncompliant-0.1"):
        run = verdicts(judge, chosen, 3, JUDGES[judge])
        failed = run[:4]
        report_store.put(run[4:])
        report_store.put(
            Rejection(stage="judges", reason="call_failed", record_kind="judge_verdict", record_id=v.id)
            for v in failed
        )
    return build_report(report_store, registry(), settings=FAST, max_cases=5, title="judges")


def test_the_section_shows_the_tables_and_what_is_missing(judged: ReportData) -> None:
    assert judged.judges is not None
    html = render_html(judged)
    assert 'id="judges-missing"' in html
    assert "8 of " in judged.judges.missing  # type: ignore[operator]  # 4 failed samples of each judge
    assert "Figure 1 · Judge samples per dataset" in html
    assert "Figure 2 · Judge samples per rank-gap tertile" in html
    assert "Table 4 · Invalid-response share" in html
    assert "pooled (all samples)" in html
    assert SMALL in html  # medbullets: 24 games
    assert "24 games" in html


def test_a_store_without_judge_runs_says_so(report_data: ReportData) -> None:
    assert report_data.judges is None
    assert "No judge verdicts in this store." in render_html(report_data)


@pytest.mark.browser
def test_the_judge_charts_render_and_are_readable(judged: ReportData, tmp_path: Path) -> None:
    path = write_report(judged, tmp_path / "report.html")
    with opened_report(path) as page:
        section = page.locator("#judges")
        assert section.is_visible()
        assert section.locator("figure.chart svg").count() == 2
        bars = section.locator("svg rect.bar")
        assert bars.count() > 10
        assert "samples correct" in bars.first.locator("title").text_content()
        assert section.locator("svg text", has_text=SMALL).count() >= 2  # medbullets, per judge
        for width in WIDTHS:
            found = readability(page, width)
            assert found["bad"] == [], width
            assert found["page"] <= found["viewport"], width
            if width >= 1920:
                assert found["scrolled"] == [], width
