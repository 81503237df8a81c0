"""The report's judge section shows the grader against the reviewers' labels beside reviewer against
reviewer and the trivial graders, each figure with its interval and n (and in headless Chromium)."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.judges.certification import shown
from livemed.records import Label
from livemed.reports.build import build_report
from livemed.reports.html import render_html, write_report
from livemed.review.sample import draw_sample
from livemed.store import Store
from tests.reports.browser import opened_report
from tests.reports.conftest import FAST, registry
from tests.reports.test_readable_widths import WIDTHS, readability

JUDGE = "fake/judge"  # the study's grader


def _labelled(store: Store, labels: bool = True) -> None:
    """The study grader's audit sample of 120 (a third double), each item labelled met on two of three."""
    sample = draw_sample(store, JUDGE, 120, seed=1, double_share=0.3)
    store.put([sample])
    if labels:
        store.put(
            Label(reviewer=who, queue="audit", item_id=item.grade_id, verdict="met" if i % 3 else "not met")
            for i, item in enumerate(sample.items)
            for who in (("ana", "ben") if item.double else ("ana",))
        )


def test_the_section_shows_the_grader_beside_the_reviewers_and_the_trivial_graders(
    report_store: Store,
) -> None:
    _labelled(report_store)
    data = build_report(report_store, registry(), settings=FAST, max_cases=5, title="reviewed")
    assert data.reviewed is not None
    assert data.reviewed.data is not None
    figures = data.reviewed.data
    html = render_html(data)
    assert 'id="judges-reviewers"' in html
    assert f"{figures['grader']['n']} of 120 items labelled" in html
    for name in (
        "grader vs reviewers, all axes",
        "trivial: always met",
        "reviewer vs reviewer, items labelled twice",
    ):
        assert name in html
    assert shown(figures["grader"]["macro_f1"]) in html  # the value, its interval and its n
    assert shown(figures["grader"]["trivial"]["always met"]["cohen_kappa"]) in html
    assert figures["reviewers"] is not None
    assert shown(figures["reviewers"]["cohen_kappa"]) in html
    assert (
        "reviewers' labels (" not in data.validity
    )  # the header's card line: what `judges agreement` stored


def test_a_sample_without_labels_says_so_and_no_sample_shows_nothing(report_store: Store) -> None:
    bare = build_report(report_store, registry(), settings=FAST, max_cases=5)
    assert bare.reviewed is None
    assert 'id="judges-reviewers"' not in render_html(bare)
    _labelled(report_store, labels=False)
    waiting = build_report(report_store, registry(), settings=FAST, max_cases=5)
    assert waiting.reviewed is not None
    assert waiting.reviewed.data is None
    assert "no met / not met labels on the audit sample" in render_html(waiting)


@pytest.mark.browser
def test_the_reviewers_table_is_readable_in_a_browser(report_store: Store, tmp_path: Path) -> None:
    _labelled(report_store)
    data = build_report(report_store, registry(), settings=FAST, max_cases=5, title="reviewed")
    path = write_report(data, tmp_path / "report.html")
    with opened_report(path) as page:
        table = page.locator("#judges table.reviewed")
        assert table.is_visible()
        assert table.locator("tbody tr").count() == len(data.reviewed.rows)  # type: ignore[union-attr]
        assert "reviewer vs reviewer" in table.inner_text()
        for width in WIDTHS:
            found = readability(page, width)
            assert found["bad"] == [], width
            assert found["page"] <= found["viewport"], width
