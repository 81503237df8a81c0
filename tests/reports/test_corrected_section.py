"""The report's "Corrected by reviewers' labels" table: there when the store has audit labels, its numbers
`score.corrected`'s, a too-few line per model, a note instead when the sample is stale; in Chromium too."""

from __future__ import annotations

from pathlib import Path

from lxml import html as lxml_html

from livemed.records import Grade, Label
from livemed.reports.build import build_report
from livemed.reports.html import render_html, write_report
from livemed.review.sample import draw_sample
from livemed.score.corrected import corrected_scores
from livemed.score.stage import score_all
from livemed.store import Store
from tests.reports.browser import opened_report
from tests.reports.conftest import FAST, registry
from tests.score.test_corrected import JUDGE, _tiny


def _store(tmp_path: Path, *, labels: bool = True) -> Store:
    store = Store(tmp_path / "report.db")
    _tiny(store)
    if not labels:
        store.delete(Label.kind, sorted(store.ids(Label.kind)))
    score_all(store, JUDGE)  # the report reads stored scores
    store.put([draw_sample(store, JUDGE, 10, seed=4)])
    return store


def _found(page: str, path: str) -> list[lxml_html.HtmlElement]:
    found = lxml_html.fromstring(page).xpath(path)
    assert isinstance(found, list)
    return [node for node in found if isinstance(node, lxml_html.HtmlElement)]


def _rows(page: str) -> list[list[str]]:
    return [
        [cell.text_content().strip() for cell in row.findall("td")]
        for row in _found(page, '//section[@id="corrected"]//tbody/tr')
    ]


def test_the_table_shows_raw_and_corrected_with_intervals_labels_and_too_few_lines(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        page = render_html(build_report(store, registry(), settings=FAST, judge=JUDGE))
        expected = corrected_scores(store, JUDGE)
    assert "<h2>Corrected by reviewers' labels</h2>" in page
    assert "(10 of 10 sampled verdicts labelled)" in page
    rows = _rows(page)
    assert [row[0] for row in rows] == ["m/a", "m/b"]
    for row, want in zip(rows, expected.scores, strict=True):
        assert row[1] == f"{want.raw:.3f}"
        assert row[2] == f"{want.corrected:.3f}"
        assert row[3] == f"{want.ci_low:.3f}–{want.ci_high:.3f}"
        assert row[4] == f"{want.classical:.3f}"
        assert row[6] == str(want.labels)
    lines = [
        p.text_content() for p in _found(page, '//section[@id="corrected"]//p[contains(@class, "too-few")]')
    ]
    assert lines == [
        f"Too few labels for a useful interval, {r.model}: {r.too_few}." for r in expected.scores
    ]


def test_no_labels_no_table_and_a_stale_sample_a_note(tmp_path: Path) -> None:
    with _store(tmp_path, labels=False) as store:
        page = render_html(build_report(store, registry(), settings=FAST, judge=JUDGE))
        assert 'id="corrected"' not in page
        store.put(
            [Label(reviewer="ann", queue="audit", item_id=next(iter(store.iter(Grade))).id, verdict="met")]
        )
        grade = next(iter(store.iter(Grade)))
        store.put([grade.model_copy(update={"explanation": "graded again"})])
        page = render_html(build_report(store, registry(), settings=FAST, judge=JUDGE))
    (note,) = (p.text_content() for p in _found(page, '//p[@id="corrected-note"]'))
    assert "written after its audit sample was drawn" in note
    assert _rows(page) == []


def test_chromium_shows_the_corrected_table(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        path = write_report(build_report(store, registry(), settings=FAST, judge=JUDGE), tmp_path / "r.html")
        expected = corrected_scores(store, JUDGE)
    with opened_report(path) as page:
        section = page.locator("#corrected")
        assert section.is_visible()
        first = section.locator("tbody tr").first.inner_text()
        assert first.split("\t")[:3] == [
            "m/a",
            f"{expected.scores[0].raw:.3f}",
            f"{expected.scores[0].corrected:.3f}",
        ]
        assert page.locator('nav a[href="#corrected"]').count() == 1
