"""Stack Exchange (default site: Medical Sciences): answered questions with their answers.

`/search/advanced` (answers >= 1, `fromdate`/`todate`, ascending by creation) with bodies, then
`/questions/{ids}/answers` for each page. Obeys the API's `backoff` field and stops cleanly when
the daily quota runs out. Errors come as HTTP 400 with `error_id`/`error_name`/`error_message` in
the wrapper: internal_error (500), throttle_violation (502) and temporarily_unavailable (503) are
retried after a backoff (or the wait a throttle message names, up to `max_throttle_wait_s`); others
stop the source. Content is CC BY-SA: each Doc keeps the licence, author and link.

The API HTML-encodes every string it returns (`Jo&#227;o &quot;JJ&quot;`). Plain-text fields (title,
tags, display names, links) are decoded here, once; bodies are HTML and stay as they came, so the
`html` pre-filter decodes them once while it strips the markup (`&amp;lt;` ends as the text `&lt;`).
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field, ValidationError

from livemed.config import describe_validation_error
from livemed.errors import SourceError
from livemed.models.engine import backoff_delay
from livemed.records import Doc, Reply, ReplyRole
from livemed.sources.base import DocOrRejection, HttpSettings, parse_date, rejection, too_large
from livemed.sources.http import HttpClient, has_bad_bytes, json_body

NAME = "stackexchange"
# error_id values worth a retry (api.stackexchange.com/docs/error-handling): internal_error,
# throttle_violation (a backoff violation or an IP throttle), temporarily_unavailable
RETRYABLE_ERRORS = frozenset({500, 502, 503})
_THROTTLE_WAIT = re.compile(r"available in (\d+) seconds?")


class Settings(HttpSettings):
    description: ClassVar[str] = "Stack Exchange Q&A (default site medicalsciences), CC BY-SA"

    base_url: str = "https://api.stackexchange.com/2.3"
    site: str = "medicalsciences"
    requests_per_second: float = Field(default=5.0, gt=0, le=30)
    min_answers: int = Field(default=1, ge=0)
    page_size: int = Field(default=100, ge=1, le=100)
    filter: str = "withbody"
    api_key_env: str | None = "STACKEXCHANGE_KEY"
    max_throttle_wait_s: float = Field(
        default=120.0, ge=0, description="longest wait a throttle_violation may ask for; longer stops"
    )


class StackExchange:
    name = NAME
    ordered = True

    def __init__(self, settings: Settings, api_key: str | None = None) -> None:
        self.settings = settings
        self._api_key = api_key

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        s = self.settings
        yielded = 0
        async with HttpClient.for_source(NAME, s) as http:
            page, more = 1, True
            while more:
                params: dict[str, Any] = {
                    "fromdate": int(since.timestamp()),
                    "todate": int(until.timestamp()),
                }
                params |= {"answers": s.min_answers, "sort": "creation", "order": "asc", "page": page}
                questions, more = await self._call(http, "/search/advanced", params)
                answers = await self._answers(http, questions)
                for question in questions:
                    item = self._checked_doc(question, answers)
                    yield item
                    yielded += isinstance(item, Doc)
                    if limit is not None and yielded >= limit:
                        return
                page += 1

    async def _call(self, http: HttpClient, path: str, params: dict[str, Any]) -> tuple[list[Any], bool]:
        """One API call: (items, has_more), honouring `backoff`, retryable errors and the quota."""
        s = self.settings
        query = {"site": s.site, "filter": s.filter, "pagesize": s.page_size, **params}
        if self._api_key:
            query["key"] = self._api_key
        for attempt in range(s.max_retries + 1):
            data = await self._reply(http, path, query)
            if "error_id" not in data:
                break
            wait = self._error_wait(path, data, attempt)
            http.retries += 1
            http.pause(wait)
        if isinstance(data.get("backoff"), int | float):
            http.pause(float(data["backoff"]))
        items = data.get("items")
        more = bool(data.get("has_more"))
        if more and data.get("quota_remaining", 1) <= 0:
            raise SourceError(f"{NAME}: daily API quota used up ({data.get('quota_max')}); try tomorrow")
        return (items if isinstance(items, list) else []), more

    async def _reply(self, http: HttpClient, path: str, query: dict[str, Any]) -> dict[str, Any]:
        """The reply's wrapper object (errors come as HTTP 400 with `error_id` in the wrapper)."""
        response = await http.get(f"{self.settings.base_url}{path}", query, accept=frozenset({400, 404}))
        try:
            data = json_body(response)
        except ValueError:
            raise SourceError(f"{NAME}: {path} returned a reply that is not JSON") from None
        if not isinstance(data, dict):
            raise SourceError(f"{NAME}: {path} returned unexpected JSON")
        if response.status_code >= 400 and "error_id" not in data:
            raise SourceError(f"{NAME}: {path} failed: HTTP {response.status_code}")
        return data

    def _error_wait(self, path: str, data: dict[str, Any], attempt: int) -> float:
        """Seconds to wait before retrying an error reply, or SourceError when it is not worth it."""
        name, message = data.get("error_name", "error"), str(data.get("error_message", ""))
        refused = SourceError(f"{NAME}: {path} refused: {name} {message}".strip())
        if data.get("error_id") not in RETRYABLE_ERRORS or attempt >= self.settings.max_retries:
            raise refused
        asked = _THROTTLE_WAIT.search(message)  # "... more requests available in 73 seconds"
        if asked is None:  # backoff violation, temporarily_unavailable, internal_error
            return backoff_delay(attempt, None, base=self.settings.backoff_base_s)
        if float(asked.group(1)) > self.settings.max_throttle_wait_s:
            raise refused  # typically the daily quota: waiting hours is not a retry
        return float(asked.group(1))

    async def _answers(self, http: HttpClient, questions: list[Any]) -> dict[int, list[dict[str, Any]]]:
        ids = [q["question_id"] for q in questions if isinstance(q, dict) and "question_id" in q]
        by_question: dict[int, list[dict[str, Any]]] = {}
        page, more = 1, bool(ids)
        while more:
            path = f"/questions/{';'.join(str(i) for i in ids)}/answers"
            items, more = await self._call(http, path, {"page": page, "sort": "creation", "order": "asc"})
            for answer in items:
                if isinstance(answer, dict) and "question_id" in answer:
                    by_question.setdefault(answer["question_id"], []).append(answer)
            page += 1
        return by_question

    def _checked_doc(self, question: Any, answers: dict[int, list[dict[str, Any]]]) -> DocOrRejection:
        """`_doc`; a value of the wrong type (a number for an author) makes a Rejection of that question."""
        try:
            return self._doc(question, answers)
        except (ValidationError, AttributeError, TypeError) as exc:
            qid = str(question.get("question_id", "")) if isinstance(question, dict) else ""
            detail = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            return rejection(NAME, qid, "malformed", f"question {qid}: {detail}")

    def _doc(self, question: Any, answers: dict[int, list[dict[str, Any]]]) -> DocOrRejection:
        if not isinstance(question, dict) or "question_id" not in question:
            return rejection(NAME, "", "malformed", "question without question_id")
        qid = str(question["question_id"])
        published = parse_date(question.get("creation_date"))
        if published is None:
            return rejection(NAME, qid, "missing_date", "question without creation_date")
        body = question.get("body")
        if not isinstance(body, str) or not body.strip():
            return rejection(NAME, qid, "no_text", "question without a body (is the filter 'withbody'?)")
        thread = answers.get(question["question_id"], [])
        if has_bad_bytes(body, question.get("title"), *(a.get("body") for a in thread)):
            return rejection(
                NAME, qid, "bad_encoding", "question or answer text had bytes that are not UTF-8"
            )
        size = len(body.encode()) + sum(len(str(a.get("body", "")).encode()) for a in thread)
        big = too_large(NAME, qid, size, self.settings.max_record_bytes)
        if big:
            return big
        owner = question.get("owner") or {}
        tags = question.get("tags") or []
        if not isinstance(tags, list):
            raise TypeError(f"tags is a {type(tags).__name__}, not a list")
        return Doc(
            source=NAME,
            source_id=qid,
            url=decoded(question.get("link"), "link"),
            published=published,
            date_field="creation_date",
            doc_type="thread",
            title=decoded(question.get("title"), "title") or "",
            text=body,
            replies=[
                _reply(a, owner.get("user_id"), self.settings.site)
                for a in thread
                if isinstance(a.get("body"), str)
            ],
            licence=str(question.get("content_license") or "CC BY-SA 4.0"),
            metadata={
                "site": self.settings.site,
                "tags": [decoded(t, "tag") for t in tags],
                "score": question.get("score"),
                "attribution": {
                    "author": decoded(owner.get("display_name"), "author"),
                    "author_url": decoded(owner.get("link"), "author link"),
                    "link": decoded(question.get("link"), "link"),
                },
            },
        )


def decoded(value: Any, name: str) -> str | None:
    """A plain-text API string with its HTML entities decoded (once); None stays None.

    Links are decoded too: the API writes them as plain URLs, so decoding changes nothing unless an
    entity (`&amp;` in a query string) was written into one.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} is a {type(value).__name__} ({value!r:.40}), not text")
    return html.unescape(value)


def _reply(answer: dict[str, Any], asker_id: Any, site: str) -> Reply:
    owner = answer.get("owner") or {}
    role = ReplyRole.OTHER
    if answer.get("is_accepted"):
        role = ReplyRole.ACCEPTED
    elif asker_id is not None and owner.get("user_id") == asker_id:
        role = ReplyRole.ASKER
    answer_id = answer.get("answer_id")
    return Reply(
        role=role,
        author=decoded(owner.get("display_name"), "answer author"),
        text=str(answer["body"]),
        date=parse_date(answer.get("creation_date")),
        url=f"https://{site}.stackexchange.com/a/{answer_id}" if answer_id else None,
    )
