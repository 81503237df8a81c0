"""The report in headless Chromium: loads cleanly, shows the leaderboard, never runs harvested script.

Needs Debian's `chromium` (or $LIVEMED_CHROMIUM) and the `playwright` Python package (dev extra), which
drives the installed browser: no browser download. Screenshots go to test-artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from livemed.reports.build import ReportData
from livemed.reports.html import write_report
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO_ROOT / "test-artifacts"


def chromium() -> str:
    for candidate in (os.environ.get("LIVEMED_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (found := shutil.which(candidate)):
            return found
    reason = "no Chromium binary found (apt-get install chromium, or set LIVEMED_CHROMIUM)"
    if os.environ.get("LIVEMED_REQUIRE_BROWSER"):  # CI installs Chromium: there a skip would hide a failure
        pytest.fail(reason)
    pytest.skip(reason)


def test_report_in_headless_chromium(report_data: ReportData, tmp_path: Path) -> None:
    binary = chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    path = write_report(report_data, tmp_path / "report.html")
    ARTIFACTS.mkdir(exist_ok=True)
    problems: list[str] = []
    remote: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=binary, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on(
                "request",
                lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None,
            )
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-report-ready]")
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
            case.evaluate(
                "el => { el.open = true; el.querySelectorAll('details').forEach(d => d.open = true); }"
            )
            text = case.inner_text()
            assert "<script>window.__pwned = 1; document.title = 'pwned'</script>" in text
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.title() != "pwned"
            case.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "report-case.png"))
            page.fill("#case-filter", "")
            assert page.locator("#case-list > details.case:visible").count() == len(report_data.cases)
        finally:
            browser.close()
    assert problems == []
    assert remote == []
