"""The contamination-only report for scores from a file: rendered HTML, and the page in headless Chromium.

The scores are GENERATED (seeded) data, labelled as such; one model id carries a <script> payload,
as a hostile scores file could.
"""

from __future__ import annotations

import csv
import re
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from livemed.analysis.contamination import AnalysisSettings, analyse
from livemed.analysis.cutoffs import CutoffEntry
from livemed.analysis.external import read_scores
from livemed.reports.external import ExternalReport, render_external, write_external
from tests.reports.browser import opened_report

FAST = AnalysisSettings(resamples=1000, permutations=1000, min_post=20, min_pre=20)
HOSTILE = "<script>window.__pwned = 1</script>"
MODELS = ("planted", "flat", HOSTILE)


@pytest.fixture
def report(tmp_path: Path) -> ExternalReport:
    """GENERATED data: 120 items every 3 days from 2024-01-01; `planted` succeeds with p 0.85 up to
    2024-06-01 and 0.45 after it, the others with p 0.6; one row has a bad date (left out)."""
    rng = np.random.default_rng(7)
    path = tmp_path / "generated-scores.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "published", "model", "score"])
        for i in range(120):
            day = date(2024, 1, 1) + timedelta(days=3 * i)
            for model in MODELS:
                p = (0.85 if day <= date(2024, 6, 1) else 0.45) if model == "planted" else 0.6
                writer.writerow([f"g{i}", day.isoformat(), model, int(rng.random() < p)])
        writer.writerow(["g999", "someday", "flat", "1"])
    read = read_scores(path)
    cutoff = CutoffEntry(cutoff=date(2024, 6, 1), source="generated test data")
    registry = {"planted": cutoff, "flat": cutoff}
    return ExternalReport(
        "Contamination <b>check</b>", read, analyse(read.rows, registry, FAST), FAST, "c.csv"
    )


def test_the_html_names_the_input_and_escapes_the_file_s_text(report: ExternalReport) -> None:
    html = render_external(report)
    assert report.scores.sha256 is not None
    assert report.scores.sha256 in html
    assert "generated-scores.csv" in html
    assert HOSTILE not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    script_src = re.search(r"script-src ([^;]*);", html)
    assert script_src is not None
    assert script_src.group(1).startswith("'sha256-")
    assert "unsafe-inline" not in script_src.group(1)


@pytest.mark.browser
def test_the_external_report_in_headless_chromium(report: ExternalReport, tmp_path: Path) -> None:
    path = write_external(report, tmp_path / "contamination.html")
    with opened_report(path) as page:  # no console error, no request beyond the file itself
        assert page.title() == "Contamination <b>check</b>"
        rows = page.locator("#contamination-table tbody tr:not(.note-row)")  # a row's note: a row under it
        assert rows.count() == 3
        models = [rows.nth(i).locator("td.model").inner_text() for i in range(3)]
        assert models == [r.model for r in report.result.rows]
        assert HOSTILE in models  # shown as text
        assert page.evaluate("typeof window.__pwned") == "undefined"
        planted = rows.nth(models.index("planted")).inner_text()
        assert "tested" in planted
        assert "significant drop" in planted
        assert page.locator("#contamination figure.chart svg").count() == 1
        assert page.locator("#rows-read").inner_text() == "361"
        assert page.locator("#rows-left-out").inner_text() == "1"
        assert page.locator("#input-sha256").inner_text() == report.scores.sha256
        assert "bad date: 1 row(s)" in page.locator("#left-out").inner_text()
        assert page.evaluate("window.livemedData.input.rows_read") == 361
        assert page.locator("#contamination-table").is_visible()
