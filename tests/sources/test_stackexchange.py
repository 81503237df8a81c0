from __future__ import annotations

import json
import time
from typing import Any

import pytest

from livemed.errors import SourceError
from livemed.records import ReplyRole
from livemed.sources.stackexchange import Settings, StackExchange
from tests.fakes.http_replay import ReplayServer, Reply
from tests.sources.helpers import FAST, collect, day

T0 = int(day("2025-03-02").timestamp())


def owner(user_id: int, name: str) -> dict[str, Any]:
    """A `shallow_user`, as the API nests it under `owner`."""
    return {
        "account_id": 1000 + user_id,
        "reputation": 101,
        "user_id": user_id,
        "user_type": "registered",
        "display_name": name,
        "link": f"https://medicalsciences.stackexchange.com/users/{user_id}/{name}",
    }


def question(qid: int, **extra: Any) -> dict[str, Any]:
    """A question under `filter=withbody` (the default fields plus `body`)."""
    return {
        "tags": ["pharmacology"],
        "owner": owner(7, "asker"),
        "is_answered": True,
        "view_count": 120,
        "accepted_answer_id": 100 + qid,
        "answer_count": 2,
        "score": 3,
        "last_activity_date": T0 + qid + 100,
        "creation_date": T0 + qid,
        "question_id": qid,
        "content_license": "CC BY-SA 4.0",
        "link": f"https://medicalsciences.stackexchange.com/questions/{qid}/is-it-safe",
        "title": "Is it safe to take ibuprofen with lisinopril?",
        "body": "<p>My father (68) takes <b>lisinopril</b> for hypertension.</p>",
        **extra,
    }


def answer(
    answer_id: int, question_id: int, accepted: bool, who: dict[str, Any], body: str
) -> dict[str, Any]:
    """An answer under `filter=withbody`."""
    return {
        "owner": who,
        "is_accepted": accepted,
        "score": 2,
        "last_activity_date": T0 + 70,
        "creation_date": T0 + 50,
        "answer_id": answer_id,
        "question_id": question_id,
        "content_license": "CC BY-SA 4.0",
        "body": body,
    }


def wrapper(items: list[Any], has_more: bool, **extra: Any) -> dict[str, Any]:
    return {"items": items, "has_more": has_more, "quota_max": 300, "quota_remaining": 290, **extra}


def handler(path: str, query: dict[str, str], backoff: int | None = 1) -> Reply:
    assert query["site"] == "medicalsciences"
    assert query["filter"] == "withbody"
    if path == "/search/advanced":
        assert query["answers"] == "1"
        assert query["sort"] == "creation"
        assert query["order"] == "asc"
        if query["page"] == "1":
            items = [question(1), question(2, creation_date=None), question(3, body="x" * 10_000_001)]
            return Reply.json(wrapper(items, True, **({"backoff": backoff} if backoff else {})))
        return Reply.json(wrapper([question(4)], False))
    ids = path.split("/")[2].split(";")
    answers = [
        answer(100 + int(i), int(i), True, owner(9, "doc"), "<p>NSAIDs can blunt ACE inhibitors.</p>")
        for i in ids
    ]
    answers.append(answer(999, int(ids[0]), False, owner(7, "asker"), "Thanks, it worked"))
    return Reply.json(wrapper(answers, False))


async def test_questions_with_answers_roles_attribution_and_backoff() -> None:
    with ReplayServer(handler) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        started = time.monotonic()
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
        elapsed = time.monotonic() - started
    assert [d.source_id for d in docs] == ["1", "4"]
    doc = docs[0]
    assert doc.id == "stackexchange:1"
    assert doc.doc_type == "thread"
    assert doc.date_field == "creation_date"
    assert doc.licence == "CC BY-SA 4.0"
    assert doc.metadata["attribution"]["author"] == "asker"
    assert doc.metadata["attribution"]["link"] == question(1)["link"]
    assert [r.role for r in doc.replies] == [ReplyRole.ACCEPTED, ReplyRole.ASKER]
    assert {r.reason for r in rejections} == {"missing_date", "too_large"}
    assert elapsed >= 0.9  # the page-1 reply asked for a 1 s backoff
    pages = [q["page"] for p, q in server.requests if p == "/search/advanced"]
    assert pages == ["1", "2"]


def error(error_id: int, name: str, message: str) -> Reply:
    """The API's error wrapper: HTTP 400 whatever the error, details in error_id/name/message."""
    return Reply.json({"error_id": error_id, "error_message": message, "error_name": name}, 400)


async def test_error_reply_and_used_up_quota_fail_the_source() -> None:
    refused = error(502, "throttle_violation", "too many requests from this IP")
    with ReplayServer(lambda p, q: refused) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST), api_key="SEKEY")
        with pytest.raises(SourceError, match="throttle_violation") as caught:
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert server.requests[0][1]["key"] == "SEKEY"
    assert "SEKEY" not in str(caught.value)
    assert len(server.requests) == 1 + FAST["max_retries"]  # retried, then given up

    spent = wrapper([], True, quota_remaining=0)
    with ReplayServer(lambda p, q: Reply.json(spent)) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        with pytest.raises(SourceError, match="quota"):
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))


@pytest.mark.parametrize(
    ("error_id", "name", "message"),
    [
        (502, "throttle_violation", "Violation of backoff parameter"),
        (503, "temporarily_unavailable", "The API is temporarily unavailable"),
        (500, "internal_error", "An internal error occurred"),
    ],
)
async def test_retryable_error_wrapper_is_retried_and_the_harvest_goes_on(
    error_id: int, name: str, message: str
) -> None:
    calls: list[str] = []

    def flaky(path: str, query: dict[str, str]) -> Reply:
        calls.append(path)
        return error(error_id, name, message) if len(calls) == 1 else handler(path, query, None)

    with ReplayServer(flaky) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        docs, _ = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["1", "4"]
    assert calls[:2] == ["/search/advanced", "/search/advanced"]


async def test_throttle_wait_named_in_the_message_is_obeyed_or_stops_the_source() -> None:
    calls: list[str] = []

    def throttled(path: str, query: dict[str, str]) -> Reply:
        calls.append(path)
        if len(calls) == 1:
            msg = "too many requests from this IP, more requests available in 1 seconds"
            return error(502, "throttle_violation", msg)
        return handler(path, query, None)

    with ReplayServer(throttled) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        started = time.monotonic()
        docs, _ = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert time.monotonic() - started >= 0.9  # waited the second the message named
    assert [d.source_id for d in docs] == ["1", "4"]

    day_long = error(
        502, "throttle_violation", "too many requests from this IP, more requests available in 82626 seconds"
    )
    with ReplayServer(lambda p, q: day_long) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        with pytest.raises(SourceError, match="82626 seconds"):
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert len(server.requests) == 1  # hours away: not retried


async def test_a_bad_parameter_error_is_not_retried() -> None:
    bad = error(400, "bad_parameter", "site is required")
    with ReplayServer(lambda p, q: bad) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        with pytest.raises(SourceError, match="bad_parameter site is required"):
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert len(server.requests) == 1


async def test_non_utf8_bytes_reject_one_question_and_keep_the_page() -> None:
    page = wrapper([question(1, body="<p>caf__BAD__</p>"), question(2)], False)
    raw = json.dumps(page).encode().replace(b"__BAD__", b"\xff\xfe")

    def handler(path: str, query: dict[str, str], backoff: int | None = 1) -> Reply:
        if path == "/search/advanced":
            return Reply(200, raw, {"Content-Type": "application/json"})
        return Reply.json(wrapper([], False))

    with ReplayServer(handler) as server:
        source = StackExchange(Settings(base_url=server.url, min_answers=0, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["2"]
    assert [(r.reason, r.record_id) for r in rejections] == [("bad_encoding", "stackexchange:1")]


async def test_a_value_of_the_wrong_type_rejects_one_question_and_keeps_the_page() -> None:
    def handler(path: str, query: dict[str, str]) -> Reply:
        if path == "/search/advanced":
            return Reply.json(wrapper([question(1), question(2), question(3, owner="asker")], False))
        who = {1: owner(9, "doc"), 2: {"user_id": 9, "display_name": 5}, 3: owner(9, "doc")}
        answers = [answer(100 + i, i, True, who[i], "<p>See your doctor.</p>") for i in (1, 2, 3)]
        return Reply.json(wrapper(answers, False))

    with ReplayServer(handler) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["1"]
    assert [(r.reason, r.record_id) for r in rejections] == [
        ("malformed", "stackexchange:2"),
        ("malformed", "stackexchange:3"),
    ]
    assert "author" in rejections[0].detail
