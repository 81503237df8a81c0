from __future__ import annotations

import asyncio
import time

import pytest

from livemed.errors import SourceError
from livemed.models.statuses import retry_after_seconds
from livemed.sources.http import HttpClient
from tests.fakes.http_replay import ReplayServer, Reply


def client(**kw: float) -> HttpClient:
    settings = {"requests_per_second": 50.0, "max_retries": 2, "backoff_base_s": 0.01, **kw}
    return HttpClient("test", **settings)  # type: ignore[arg-type]


async def test_429_is_retried_after_retry_after() -> None:
    calls = []

    def handler(path: str, query: dict[str, str]) -> Reply:
        calls.append(path)
        return (
            Reply.json({"n": len(calls)}, 429, **{"Retry-After": "1"}) if len(calls) == 1 else Reply.json({})
        )

    with ReplayServer(handler) as server:
        async with client() as http:
            started = time.monotonic()
            response = await http.get(f"{server.url}/x")
            waited = time.monotonic() - started
    assert response.status_code == 200
    assert len(calls) == 2
    assert http.retries == 1
    assert waited >= 0.9


async def test_source_that_stays_down_fails_with_a_clear_message_and_no_key() -> None:
    with ReplayServer(lambda p, q: Reply(503, b"down")) as server:
        async with client() as http:
            with pytest.raises(SourceError) as caught:
                await http.get(f"{server.url}/search", {"api_key": "SECRET123"})
    assert len(server.requests) == 3  # 1 + max_retries
    message = str(caught.value)
    assert "test" in message
    assert "HTTP 503" in message
    assert "3 attempts" in message
    assert "SECRET123" not in message


async def test_client_error_fails_at_once() -> None:
    with ReplayServer(lambda p, q: Reply(403, b"no")) as server:
        async with client() as http:
            with pytest.raises(SourceError, match="HTTP 403"):
                await http.get(f"{server.url}/x")
    assert len(server.requests) == 1


async def test_connection_refused_is_retried_then_fails() -> None:
    async with client(max_retries=1) as http:
        with pytest.raises(SourceError, match="ConnectError"):
            await http.get("http://127.0.0.1:9/")


def test_retry_after_parses_seconds_and_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("soon") is None


@pytest.mark.parametrize(("rate", "requests"), [(4.0, 10), (0.8, 3)])
async def test_the_rate_limit_allows_no_burst(rate: float, requests: int) -> None:
    arrived: list[float] = []

    def handler(path: str, query: dict[str, str]) -> Reply:
        arrived.append(time.monotonic())
        return Reply.json({})

    with ReplayServer(handler) as server:
        async with client(requests_per_second=rate) as http:
            started = time.monotonic()
            await asyncio.gather(*(http.get(f"{server.url}/x") for _ in range(requests)))
    assert len(arrived) == requests
    # The limiter lets one request through per 1/rate seconds from the start, so the j-th request to
    # arrive left no earlier than the j-th one let through: j/rate after the start, however late any
    # request was on its way (a busy machine). The old limiter let `rate` requests through at once.
    for j, at in enumerate(sorted(arrived)):
        assert at - started >= j / rate, f"request {j + 1} of {requests} arrived {at - started:.3f} s in"
