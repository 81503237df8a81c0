"""The report is readable from 360 px to 1,920 px wide, in headless Chromium, every <details> open.

The rule this test holds the page to, for every piece of text the page renders (HTML text nodes and
SVG <text>, chart labels included):

- no text is clipped: a text box must lie inside every ancestor whose overflow is `hidden` or `clip`
  (an SVG's viewport is one), and must not be cut by `text-overflow`; a horizontal scroll container
  (overflow `auto`/`scroll`) is allowed, since its text is reached by scrolling, but the container
  itself must then lie inside its ancestors, and whatever is outermost must lie inside the viewport
  (the page itself never scrolls sideways);
- no text is smaller than 10 px as rendered: the computed font size for HTML, and for SVG text its
  font size times the scale its screen transform applies (a chart drawn smaller than its viewBox);
- on a wide screen (1,920 px) no table or chart needs its scroll container: everything fits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from livemed.reports.build import ReportData
from livemed.reports.html import write_report
from tests.conftest import REPO_ROOT
from tests.reports.browser import opened_report

pytestmark = pytest.mark.browser

ARTIFACTS = REPO_ROOT / "test-artifacts"
MIN_PX = 10.0

UNREADABLE = """(minPx) => {
  const viewport = document.documentElement.clientWidth;
  const clips = v => v === "hidden" || v === "clip";
  const scrolls = v => v === "auto" || v === "scroll";
  const inside = (r, box) => r.left >= box.left - 1 && r.right <= box.right + 1 &&
                             r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  const name = el =>
    `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${el.getAttribute("class") || ""}`;
  const bad = [];
  const report = (kind, el, text, extra) => bad.length < 20 &&
    bad.push(`${kind}: ${JSON.stringify(text.trim().slice(0, 40))} in ${name(el)} ${extra}`);

  function clipped(rect, el) {  // the first ancestor that cuts this box off, or the viewport
    let box = rect;
    for (let up = el; up && up !== document.documentElement; up = up.parentElement) {
      const style = getComputedStyle(up);
      const r = up.getBoundingClientRect();
      if (scrolls(style.overflowX) || scrolls(style.overflowY)) { box = r; continue; }  // scrolled to
      if ((clips(style.overflowX) || clips(style.overflowY)) && !inside(box, r)) return `cut by ${name(up)}`;
    }
    if (box.left < -1 || box.right > viewport + 1) return `outside the ${viewport}px viewport`;
    return null;
  }

  function svgPx(el) {  // an SVG text's font size as drawn: the CSS size times the screen scale
    const m = el.getScreenCTM();
    const scale = m ? Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)) : 1;
    return parseFloat(getComputedStyle(el).fontSize) * scale;
  }

  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let checked = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim()) continue;
    const el = node.parentElement;
    if (el.closest("script, style, title, select")) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
    if (!rects.length || getComputedStyle(el).visibility === "hidden") continue;  // not rendered
    checked += 1;
    const svgText = el.closest("text");
    const px = svgText ? svgPx(svgText) : parseFloat(getComputedStyle(el).fontSize);
    if (px < minPx - 0.01) report("small", el, node.textContent, `${px.toFixed(1)}px`);
    for (const r of rects) {
      const why = clipped(r, el);
      if (why) { report("clipped", el, node.textContent, why); break; }
    }
    if (getComputedStyle(el).textOverflow === "ellipsis" && el.scrollWidth > el.clientWidth + 1)
      report("clipped", el, node.textContent, "by text-overflow");
  }
  const page = document.documentElement.scrollWidth;
  const scrolled = [...document.querySelectorAll("*")].filter(el => {
    const s = getComputedStyle(el);
    return (scrolls(s.overflowX)) && el.scrollWidth > el.clientWidth + 1;
  }).map(name);
  return {bad, checked, page, viewport, scrolled};
}"""

OPEN_ALL = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def readability(page: Any, width: int) -> dict[str, Any]:
    page.set_viewport_size({"width": width, "height": 900})
    page.evaluate(OPEN_ALL)
    found: dict[str, Any] = page.evaluate(UNREADABLE, MIN_PX)
    return found


WIDTHS = (360, 800, 1920)


def test_no_text_is_clipped_or_under_10_px(report_data: ReportData, tmp_path: Path) -> None:
    path = write_report(report_data, tmp_path / "report.html")
    ARTIFACTS.mkdir(exist_ok=True)
    with opened_report(path) as page:
        for width in WIDTHS:
            found = readability(page, width)
            page.screenshot(path=str(ARTIFACTS / f"report-{width}px.png"))
            assert found["checked"] > 500, width  # the check saw the page's text, charts and open cases
            assert found["bad"] == [], width
            assert found["page"] <= found["viewport"], width  # the page never scrolls sideways
            if width >= 1920:
                assert found["scrolled"] == []  # a wide screen shows every table and chart whole


def test_the_check_finds_clipped_and_tiny_text(report_data: ReportData, tmp_path: Path) -> None:
    # the same check on a copy of the report with text cut by overflow: hidden and a 6 px label
    path = write_report(report_data, tmp_path / "report.html")
    broken = path.read_text(encoding="utf-8").replace(
        "</style>", "#leaderboard h2 { width: 20px; overflow: hidden; white-space: nowrap; }\n"
        "figure.chart svg { min-width: 0 !important; width: 200px; }\n</style>", 1,
    )  # fmt: skip
    path.write_text(broken, encoding="utf-8")
    with opened_report(path) as page:
        found = readability(page, 1920)
    assert any(b.startswith('clipped: "Leaderboard" in h2') for b in found["bad"]), found["bad"]
    assert any(b.startswith("small:") and "text" in b for b in found["bad"]), found["bad"]
