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


def most_in_one_window(times: list[float], window: float) -> int:
    """The largest number of `times` inside any sliding window of `window` seconds (both ends included)."""
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t - start <= window) for i, start in enumerate(times))


@pytest.mark.parametrize(("rate", "requests"), [(4.0, 10), (0.8, 3)])
async def test_the_rate_limit_allows_no_burst_in_any_window(rate: float, requests: int) -> None:
    arrived: list[float] = []

    def handler(path: str, query: dict[str, str]) -> Reply:
        arrived.append(time.monotonic())
        return Reply.json({})

    with ReplayServer(handler) as server:
        async with client(requests_per_second=rate) as http:
            await asyncio.gather(*(http.get(f"{server.url}/x") for _ in range(requests)))
    assert len(arrived) == requests
    # Windows a little shorter than the spacing allows: a request delayed on its way (a busy CI machine)
    # must not look like a burst. The old limiter let `rate` requests through at once, then more: 7 in 0.9 s.
    if rate >= 1:
        assert most_in_one_window(arrived, 0.9) <= rate
    else:
        assert most_in_one_window(arrived, 1.0) <= 1  # under 1/s: one request per 1/rate (1.25 s) at most
