"""The review app over HTTP: sessions, CSRF, the CSP, blind audit pages, labels, undo, edits, results."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import lxml.html
import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from livemed.records import AuditSample, Grade, Label, RubricVersion
from livemed.review.app import make_app
from livemed.review.security import CSP
from livemed.review.tokens import invite
from livemed.store import Store
from tests.review.conftest import HOSTILE, JUDGE, hostile_store, logged_in

PAGES = ["/", "/queue/audit", "/queue/criteria/back", "/item/audit?id=x", "/results", "/static/review.js"]


def _first_audit(store: Store) -> str:
    sample = store.get(AuditSample, f"audit_sample:{JUDGE}")
    assert sample is not None
    return sample.items[0].grade_id


def _item_id(page: str) -> str:
    found = re.search(r'name="item_id" value="([^"]+)"', page)
    assert found
    return html.unescape(found.group(1))


@pytest.mark.parametrize("path", PAGES)
def test_every_page_without_a_session_is_refused_in_one_line(review_store: Store, path: str) -> None:
    response = TestClient(make_app(review_store)).get(path)
    assert response.status_code == 401
    assert response.text.strip().count("\n") == 0
    assert "livemed review invite NAME" in response.text
    assert response.headers["content-security-policy"] == CSP


def test_a_post_without_a_session_is_refused_and_writes_nothing(review_store: Store) -> None:
    item = _first_audit(review_store)
    response = TestClient(make_app(review_store)).post(
        "/label", data={"queue": "audit", "item_id": item, "verdict": "met"}
    )
    assert response.status_code == 401
    assert list(review_store.ids(Label.kind)) == []


def test_an_unknown_or_replaced_invite_link_is_refused(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    old = invite(review_store, "ada")
    invite(review_store, "ada")
    for token in (old, "not-a-token", ""):
        response = client.get(f"/login?token={token}")
        assert response.status_code == 403
        assert "livemed review invite NAME" in response.text
        assert "set-cookie" not in response.headers


def test_the_link_opens_a_strict_http_only_session_and_a_new_invite_ends_it(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    response = client.get(f"/login?token={invite(review_store, 'ada')}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert client.get("/").status_code == 200
    invite(review_store, "ada")
    assert client.get("/").status_code == 401


def test_every_response_carries_the_strict_csp(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    logged_in(client, review_store, "ada")
    for path in ["/", "/queue/audit", "/results", "/static/review.js", "/static/review.css", "/nowhere"]:
        response = client.get(path)
        assert response.headers["content-security-policy"] == CSP, path
        assert "frame-ancestors 'none'" in CSP
        assert response.headers["x-content-type-options"] == "nosniff"


def test_a_post_without_or_with_a_wrong_csrf_token_is_refused(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    csrf = logged_in(client, review_store, "ada")
    item = _first_audit(review_store)
    form = {"queue": "audit", "item_id": item, "verdict": "met"}
    for extra in ({}, {"csrf": "wrong"}, {"csrf": csrf[:-1]}):
        response = client.post("/label", data=form | extra)
        assert response.status_code == 403
        assert response.text.strip() == (
            "refused: this form's CSRF token is missing or wrong (reload the page and try again)"
        )
    assert client.post("/undo", data={}).status_code == 403
    assert list(review_store.ids(Label.kind)) == []
    other = TestClient(make_app(review_store))
    logged_in(other, review_store, "bo")
    assert other.post("/label", data=form | {"csrf": csrf}).status_code == 403  # ada's token, bo's session
    assert list(review_store.ids(Label.kind)) == []


def test_the_csrf_token_may_come_as_a_header(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    csrf = logged_in(client, review_store, "ada")
    item = _first_audit(review_store)
    response = client.post(
        "/label",
        data={"queue": "audit", "item_id": item, "verdict": "not met"},
        headers={"X-CSRF-Token": csrf},
        follow_redirects=False,
    )
    assert response.status_code == 303
    label = review_store.get(Label, f"label:audit:{item}:ada")
    assert label is not None
    assert label.verdict == "not met"


def test_the_audit_page_shows_nothing_of_the_graders_verdict(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    logged_in(client, review_store, "ada")
    item = _first_audit(review_store)
    grade = review_store.get(Grade, item)
    assert grade is not None
    secret = "GRADER-EXPLANATION-7f3a: the answer clearly covers it"
    review_store.put([grade.model_copy(update={"explanation": secret})])
    url = f"/item/audit?id={quote(item, safe='')}"
    first = client.get(url).text
    review_store.put([grade.model_copy(update={"met": not grade.met, "explanation": secret + " not"})])
    second = client.get(url).text
    assert first == second  # the page is the same whatever the grader said
    assert "GRADER-EXPLANATION" not in first
    assert "stratum" not in first
    visible = " ".join(str(part) for part in lxml.html.document_fromstring(first).itertext())
    model = grade.answer_id.split(":")[-2]
    assert model not in visible  # nor which candidate wrote the answer (only the form's hidden id says)


def test_harvested_markup_is_escaped_and_shown_as_text(sqlite_store: Store) -> None:
    grades = hostile_store(sqlite_store)
    client = TestClient(make_app(sqlite_store))
    logged_in(client, sqlite_store, "ada")
    page = client.get(f"/item/audit?id={quote(grades[0].id, safe='')}").text
    assert "<script>document" not in page
    assert "<b>bold?</b>" not in page
    assert str(escape(HOSTILE)) in page  # Jinja's autoescape
    assert page.count("<script") == 1  # the app's own script tag, nothing else
    assert '<script src="/static/review.js" defer></script>' in page


def test_a_label_is_stored_then_the_next_item_follows_and_undo_takes_it_back(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    csrf = logged_in(client, review_store, "ada")
    page = client.get("/queue/audit")
    item = _item_id(page.text)
    response = client.post(
        "/label", data={"csrf": csrf, "queue": "audit", "item_id": item, "verdict": "met", "note": " wax "}
    )
    assert _item_id(response.text) != item
    label = review_store.get(Label, f"label:audit:{item}:ada")
    assert label is not None
    assert (label.verdict, label.note, label.reviewer, label.source) == ("met", "wax", "ada", "app")
    back = client.get(f"/queue/audit/back?before={quote(_item_id(response.text), safe='')}")
    assert _item_id(back.text) == item
    assert "Your label: <strong>met</strong> · wax" in back.text
    undone = client.post("/undo", data={"csrf": csrf})
    assert _item_id(undone.text) == item
    assert review_store.get(Label, f"label:audit:{item}:ada") is None


def test_a_verdict_the_queue_does_not_take_is_refused_in_one_line(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    csrf = logged_in(client, review_store, "ada")
    item = _first_audit(review_store)
    response = client.post(
        "/label", data={"csrf": csrf, "queue": "audit", "item_id": item, "verdict": "edit"}
    )
    assert response.status_code == 400
    assert response.text.strip() == "'edit' is not a verdict of the audit queue (met, not met, unsure)"
    missing = client.post(
        "/label", data={"csrf": csrf, "queue": "audit", "item_id": "grade:x", "verdict": "met"}
    )
    assert missing.status_code == 400
    assert list(review_store.ids(Label.kind)) == []


def test_an_edit_in_the_criteria_queue_writes_a_rubric_version(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    csrf = logged_in(client, review_store, "ada")
    item = _item_id(client.get("/queue/criteria").text)
    form = {
        "csrf": csrf,
        "queue": "criteria",
        "item_id": item,
        "verdict": "edit",
        "text": "  Says to  rest  ",
    }
    assert client.post("/label", data=form, follow_redirects=False).status_code == 303
    case_id, _, criterion_id = item.partition("#")
    versions = list(review_store.by_parents(RubricVersion, [case_id]))
    assert len(versions) == 1
    assert versions[0].change.action == "edit"
    assert versions[0].change.criterion_id == criterion_id
    assert versions[0].change.new is not None
    assert versions[0].change.new.text == "Says to rest"
    empty = client.post("/label", data=form | {"text": "   "})
    assert empty.status_code == 400


def test_the_index_shows_each_queues_progress_and_results_count_labels(review_store: Store) -> None:
    client = TestClient(make_app(review_store))
    csrf = logged_in(client, review_store, "ada")
    item = _first_audit(review_store)
    client.post("/label", data={"csrf": csrf, "queue": "audit", "item_id": item, "verdict": "unsure"})
    index = client.get("/").text
    assert re.search(r'data-queue="audit"><td>[^<]+</td><td>1</td><td>40</td>', index)
    results = client.get("/results").text
    assert "<td>audit</td><td>ada</td><td>1</td>" in results


def test_results_render_what_the_hook_returns(review_store: Store) -> None:
    def figures(store: Store, judge: str | None) -> dict[str, object]:
        row = ["kappa", "0.61", "0.52–0.70", f"{judge}"]
        section = {"title": "Agreement", "columns": ["metric", "value", "95% CI", "grader"], "rows": [row]}
        return {"sections": [section | {"note": "n = 40 <labels>"}]}

    client = TestClient(make_app(review_store, judge=JUDGE, results=figures))
    logged_in(client, review_store, "ada")
    page = client.get("/results").text
    assert "<td>0.52–0.70</td><td>offline/lexical</td>" in page
    assert "n = 40 &lt;labels&gt;" in page


def test_results_are_computed_once_as_the_app_starts_and_shared_until_a_label(review_store: Store) -> None:
    calls: list[str | None] = []

    def counted(store: Store, judge: str | None) -> dict[str, object]:
        calls.append(judge)
        return {"sections": []}

    with TestClient(make_app(review_store, judge=JUDGE, results=counted)) as client:  # runs the lifespan
        csrf = logged_in(client, review_store, "ada")
        assert client.get("/results").status_code == 200
        assert calls == [JUDGE]  # computed as it started; the page shows those values
        item = _first_audit(review_store)
        client.post("/label", data={"csrf": csrf, "queue": "audit", "item_id": item, "verdict": "met"})
        client.get("/results")
        assert calls == [JUDGE, JUDGE]


def test_a_restarted_server_ends_every_session(review_store: Store) -> None:
    before = TestClient(make_app(review_store))
    logged_in(before, review_store, "ada")
    after = TestClient(make_app(review_store))  # the same store, a new server: a new secret
    after.cookies = before.cookies
    assert after.cookies.get("livemed_review")  # the session cookie goes with every request
    assert before.get("/").status_code == 200
    assert after.get("/").status_code == 401
