"""The review app in headless Chromium: keyboard labelling end to end, and hostile text shown as text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import pytest

from livemed.records import Label, RubricVersion
from livemed.review.app import make_app
from livemed.review.tokens import invite
from livemed.store import Store
from tests.reports.browser import guarded_page
from tests.review.conftest import HOSTILE, hostile_store
from tests.review.serving import serving

pytestmark = pytest.mark.browser


@contextmanager
def browser_page(base: str) -> Iterator[Any]:
    """A Chromium page; on leaving, no console error (a CSP violation is one) and no request elsewhere."""
    with guarded_page((base,)) as page:
        yield page


def _press(page: Any, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)
    page.wait_for_selector("html[data-review-ready]")


def _item(page: Any) -> str:
    return str(page.input_value("#label-form input[name=item_id]"))


def test_invite_label_with_the_keyboard_undo_and_edit_a_criterion(review_store: Store) -> None:
    link_token = invite(review_store, "ada")
    with serving(make_app(review_store)) as base, browser_page(base) as page:
        page.goto(f"{base}/login?token={link_token}")
        page.wait_for_selector("html[data-review-ready]")
        assert page.text_content("#reviewer") == "ada"
        assert page.url == f"{base}/"
        with page.expect_navigation():
            page.click("tr[data-queue=audit] a")
        first = _item(page)
        _press(page, "1")
        second = _item(page)
        _press(page, "2")
        skipped = _item(page)
        _press(page, "j")
        third = _item(page)
        _press(page, "1")
        assert len({first, second, skipped, third}) == 4
        _press(page, "u")
        assert _item(page) == third  # back on the item whose label was taken back
        _press(page, "k")
        assert _item(page) == second
        assert page.text_content("#mine") == "Your label: not met"
        page.goto(f"{base}/queue/criteria")
        page.wait_for_selector("html[data-review-ready]")
        criterion = _item(page)
        page.keyboard.press("e")
        assert page.evaluate("document.activeElement.id") == "edit-text"
        page.keyboard.type("Advises seeing a nurse for ear irrigation")  # replaces the selected text
        _press(page, "Enter")
        assert _item(page) != criterion
        page.keyboard.press("2")  # in the criteria queue, 2 (edit) also goes to the text
        assert page.evaluate("document.activeElement.id") == "edit-text"
    labels = {(label.item_id, label.verdict) for label in review_store.iter(Label) if label.reviewer == "ada"}
    assert labels == {(first, "met"), (second, "not met"), (criterion, "edit")}
    case_id, _, criterion_id = criterion.partition("#")
    (version,) = review_store.by_parents(RubricVersion, [case_id])
    assert (version.version, version.reviewer, version.change.action) == (1, "ada", "edit")
    assert version.change.criterion_id == criterion_id
    assert version.change.new is not None
    assert version.change.new.text == "Advises seeing a nurse for ear irrigation"
    assert "Advises seeing a nurse for ear irrigation" in {c.text for c in version.criteria}


def test_a_script_in_a_case_is_shown_as_text_and_never_runs(sqlite_store: Store) -> None:
    grades = hostile_store(sqlite_store)
    token = invite(sqlite_store, "ada")
    with serving(make_app(sqlite_store)) as base, browser_page(base) as page:
        page.goto(f"{base}/login?token={token}")
        page.goto(f"{base}/item/audit?id={quote(grades[0].id, safe='')}")
        page.wait_for_selector("html[data-review-ready]")
        assert page.evaluate("document.documentElement.dataset.pwned") is None
        assert HOSTILE in str(page.text_content("#prompt"))
        assert page.text_content("#answer") == f"My answer {HOSTILE}"
        assert page.eval_on_selector_all("main script, main b, main i", "found => found.length") == 0


def _results(page: Any, base: str) -> tuple[str, str]:
    page.goto(f"{base}/results")
    page.wait_for_selector("html[data-review-ready]")
    sections = page.eval_on_selector_all("section.results", "found => found.map(s => s.innerText)")
    agreement = next(s for s in sections if s.startswith("Agreement of"))
    corrected = next(s for s in sections if s.startswith("Scores by"))
    return agreement, corrected


def test_labels_given_with_the_keyboard_change_the_agreement_and_the_corrected_scores(
    review_store: Store,
) -> None:
    from livemed.records import AuditSample, Grade
    from livemed.review.labels import put_label

    sample = review_store.get(AuditSample, "audit_sample:offline/lexical")
    assert sample is not None
    verdicts = {
        g.id: g.met for g in review_store.get_many(Grade, [i.grade_id for i in sample.items]).values()
    }
    *agreeing, _ = sample.items  # the reviewer agrees with the grader on all but the last few, given below
    for item in agreeing[:-4]:
        put_label(
            review_store, "bea", "audit", item.grade_id, "met" if verdicts[item.grade_id] else "not met"
        )
    token = invite(review_store, "bea")
    with serving(make_app(review_store, judge="offline/lexical")) as base, browser_page(base) as page:
        page.goto(f"{base}/login?token={token}")
        before = _results(page, base)
        assert "grader vs reviewers, all axes" in before[0]
        assert "offline/reference" in before[1]
        page.goto(f"{base}/queue/audit")
        page.wait_for_selector("html[data-review-ready]")
        for _ in range(5):  # the items left: labelled against the grader's verdict
            shown_id = _item(page)
            _press(page, "2" if verdicts[shown_id] else "1")
        after = _results(page, base)
    assert after[0] != before[0]
    assert after[1] != before[1]
    assert len([label for label in review_store.iter(Label) if label.reviewer == "bea"]) == len(sample.items)
