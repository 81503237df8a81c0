"""Headless Chromium for report tests: find the browser, open a report, collect what went wrong.

Needs Debian's `chromium` (or $LIVEMED_CHROMIUM) and the `playwright` Python package (dev extra), which
drives the installed browser: no browser download.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

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


def chromium() -> str:
    for candidate in (os.environ.get("LIVEMED_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and (found := shutil.which(candidate)):
            return found
    reason = "no Chromium binary found (apt-get install chromium, or set LIVEMED_CHROMIUM)"
    if os.environ.get("LIVEMED_REQUIRE_BROWSER"):  # CI installs Chromium: there a skip would hide a failure
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def guarded_page(
    allowed: tuple[str, ...], *, errors: list[str] | None = None, viewport: dict[str, int] | None = None
) -> Iterator[Any]:
    """A headless Chromium page; on leaving, no console error (a CSP violation is one) and no request to
    an address not starting with one of `allowed`. With `errors`, console errors are collected there for
    the test to check instead."""
    binary = chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    problems: list[str] = []
    remote: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=binary, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=viewport) if viewport else browser.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: None if r.url.startswith(allowed) else remote.append(r.url))
            yield page
        finally:
            browser.close()
    if errors is None:
        assert problems == []
    else:
        errors.extend(problems)
    assert remote == []


@contextmanager
def opened_report(path: Path, *, errors: list[str] | None = None) -> Iterator[Any]:
    """The report loaded in a page; on leaving, no console error and no request beyond the file itself.

    With `errors`, console errors are collected there for the test to check instead.
    """
    with guarded_page(("file:", "data:"), errors=errors, viewport={"width": 1400, "height": 1000}) as page:
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-report-ready]")
        yield page
