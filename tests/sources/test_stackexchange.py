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


def question(qid: int, **extra: Any) -> dict[str, Any]:
    return {
        "question_id": qid,
        "title": "Is it safe to take ibuprofen with lisinopril?",
        "body": "<p>My father (68) takes <b>lisinopril</b> for hypertension.</p>",
        "creation_date": T0 + qid,
        "link": f"https://medicalsciences.stackexchange.com/questions/{qid}",
        "owner": {
            "user_id": 7,
            "display_name": "asker",
            "link": "https://medicalsciences.stackexchange.com/users/7",
        },
        "tags": ["pharmacology"],
        "content_license": "CC BY-SA 4.0",
        "answer_count": 2,
        **extra,
    }


def wrapper(items: list[Any], has_more: bool, **extra: Any) -> dict[str, Any]:
    return {"items": items, "has_more": has_more, "quota_max": 300, "quota_remaining": 290, **extra}


def handler(path: str, query: dict[str, str]) -> Reply:
    assert query["site"] == "medicalsciences"
    assert query["filter"] == "withbody"
    if path == "/search/advanced":
        assert query["answers"] == "1"
        assert query["sort"] == "creation"
        assert query["order"] == "asc"
        if query["page"] == "1":
            items = [question(1), question(2, creation_date=None), question(3, body="x" * 10_000_001)]
            return Reply.json(wrapper(items, True, backoff=1))
        return Reply.json(wrapper([question(4)], False))
    ids = path.split("/")[2].split(";")
    answers = [
        {
            "answer_id": 100 + int(i),
            "question_id": int(i),
            "body": "<p>NSAIDs can blunt ACE inhibitors.</p>",
            "is_accepted": True,
            "creation_date": T0 + 50,
            "owner": {"user_id": 9, "display_name": "doc"},
        }
        for i in ids
    ]
    answers.append(
        {
            "answer_id": 999,
            "question_id": int(ids[0]),
            "body": "Thanks, it worked",
            "is_accepted": False,
            "creation_date": T0 + 60,
            "owner": {"user_id": 7, "display_name": "asker"},
        }
    )
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
    assert doc.metadata["attribution"]["link"] == "https://medicalsciences.stackexchange.com/questions/1"
    assert [r.role for r in doc.replies] == [ReplyRole.ACCEPTED, ReplyRole.ASKER]
    assert {r.reason for r in rejections} == {"missing_date", "too_large"}
    assert elapsed >= 0.9  # the page-1 reply asked for a 1 s backoff
    pages = [q["page"] for p, q in server.requests if p == "/search/advanced"]
    assert pages == ["1", "2"]


async def test_error_reply_and_used_up_quota_fail_the_source() -> None:
    refused = {"error_id": 502, "error_name": "throttle_violation", "error_message": "too many requests"}
    with ReplayServer(lambda p, q: Reply.json(refused, 400)) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST), api_key="SEKEY")
        with pytest.raises(SourceError, match="throttle_violation") as caught:
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert server.requests[0][1]["key"] == "SEKEY"
    assert "SEKEY" not in str(caught.value)

    spent = wrapper([], True, quota_remaining=0)
    with ReplayServer(lambda p, q: Reply.json(spent)) as server:
        source = StackExchange(Settings(base_url=server.url, **FAST))
        with pytest.raises(SourceError, match="quota"):
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))


async def test_non_utf8_bytes_reject_one_question_and_keep_the_page() -> None:
    page = wrapper([question(1, body="<p>caf__BAD__</p>"), question(2)], False)
    raw = json.dumps(page).encode().replace(b"__BAD__", b"\xff\xfe")

    def handler(path: str, query: dict[str, str]) -> Reply:
        if path == "/search/advanced":
            return Reply(200, raw, {"Content-Type": "application/json"})
        return Reply.json(wrapper([], False))

    with ReplayServer(handler) as server:
        source = StackExchange(Settings(base_url=server.url, min_answers=0, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["2"]
    assert [(r.reason, r.record_id) for r in rejections] == [("bad_encoding", "stackexchange:1")]
