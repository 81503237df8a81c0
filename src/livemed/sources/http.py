"""A polite HTTP client for sources: a request-rate limit, bounded retries, Retry-After and backoff.

The rate limit spaces requests (each attempt, retries included) at least 1/rate apart, so no 1-s
window ever holds more than `rate` requests, even from concurrent tasks.

Retries use the engine's own policy (`livemed.models.engine.backoff_delay`): 429, 5xx, timeouts and
connection errors are retried up to `max_retries` times; other 4xx fail at once. Failure is a
`SourceError` naming the source and the URL path, never the query string (it may carry an API key).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
from aiolimiter import AsyncLimiter

from livemed import __version__
from livemed.errors import SourceError
from livemed.models.engine import backoff_delay
from livemed.models.statuses import retry_after_seconds
from livemed.sources.base import HttpSettings

# httpx logs full request URLs at INFO level; query strings may hold API keys.
logging.getLogger("httpx").setLevel(logging.WARNING)

RATE_MARGIN = 1.05  # requests are spaced 5% wider than 1/rate
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
USER_AGENT = f"livemed/{__version__} (+https://github.com/livemed/livemed)"


def json_body(response: httpx.Response) -> Any:
    """The reply's JSON; bytes that are not UTF-8 become U+FFFD so one bad record cannot sink a page.

    Raises ValueError when the body is not JSON at all.
    """
    return json.loads(response.content.decode("utf-8", errors="replace"))


def has_bad_bytes(*texts: object) -> bool:
    """True when a text carries U+FFFD from `json_body`'s repair (the record had non-UTF-8 bytes)."""
    return any(isinstance(text, str) and "\ufffd" in text for text in texts)


def rate_limiter(requests_per_second: float) -> AsyncLimiter:
    """A limiter that lets one request through per 1/rate seconds (a little more), never a burst.

    `AsyncLimiter(rate, 1)` would let `rate` requests through at once and then `rate`/s, so a 1-s
    window could hold almost twice the rate. The margin keeps a window under the rate when network
    jitter brings two requests a little closer together at the server.
    """
    return AsyncLimiter(1, RATE_MARGIN / requests_per_second)


class HttpClient:
    """`async with HttpClient(...) as http: response = await http.get(url, params)`."""

    def __init__(
        self,
        source: str,
        *,
        requests_per_second: float,
        max_retries: int = 4,
        timeout_s: float = 30.0,
        backoff_base_s: float = 1.0,
    ) -> None:
        self.source = source
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.limiter = rate_limiter(requests_per_second)
        self.client = httpx.AsyncClient(
            timeout=timeout_s, headers={"User-Agent": USER_AGENT}, follow_redirects=True
        )
        self.requests = 0
        self.retries = 0
        self._not_before = 0.0

    @classmethod
    def for_source(
        cls, source: str, settings: HttpSettings, *, requests_per_second: float | None = None
    ) -> HttpClient:
        """A client with a source's rate, retry and timeout settings (the rate may be overridden)."""
        return cls(
            source,
            requests_per_second=requests_per_second or settings.requests_per_second,
            max_retries=settings.max_retries,
            timeout_s=settings.timeout_s,
            backoff_base_s=settings.backoff_base_s,
        )

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.client.aclose()

    def pause(self, seconds: float) -> None:
        """Send nothing for `seconds` (an API's own `backoff` instruction)."""
        self._not_before = max(self._not_before, time.monotonic() + max(0.0, seconds))

    async def get(
        self, url: str, params: Mapping[str, Any] | None = None, *, accept: frozenset[int] = frozenset({404})
    ) -> httpx.Response:
        """GET with rate limit and retries; statuses in `accept` are returned, other failures raise."""
        where = self._where(url)
        last = ""
        for attempt in range(self.max_retries + 1):
            wait = self._not_before - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            async with self.limiter:
                self.requests += 1
                try:
                    response = await self.client.get(url, params=dict(params or {}))
                except httpx.TransportError as exc:
                    last, retry_after = type(exc).__name__, None
                else:
                    if response.status_code < 400 or response.status_code in accept:
                        return response
                    last = f"HTTP {response.status_code}"
                    if response.status_code not in RETRY_STATUSES:
                        raise SourceError(f"{self.source}: GET {where} failed: {last}")
                    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            if attempt < self.max_retries:
                self.retries += 1
                await asyncio.sleep(backoff_delay(attempt, retry_after, base=self.backoff_base_s))
        raise SourceError(
            f"{self.source}: GET {where} still failing after {self.max_retries + 1} attempts ({last}); "
            "the source is down or refusing requests, try again later"
        )

    def _where(self, url: str) -> httpx.URL:
        """The URL without its query (which may carry a key), for messages; a malformed URL is one line."""
        try:
            return httpx.URL(url).copy_with(query=None)
        except httpx.InvalidURL as exc:
            raise SourceError(f"{self.source}: invalid URL {url.split('?')[0]!r}: {exc}") from None

    async def download(self, url: str, dest: Path, *, chunk_size: int = 1 << 16) -> int:
        """GET `url` streamed into the file `dest` (not held in memory), with the same rate limit and
        retries as `get` (a transfer cut off midway is retried from the start); returns the bytes written.
        """
        where = self._where(url)
        last = ""
        for attempt in range(self.max_retries + 1):
            wait = self._not_before - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            retry_after: float | None = None
            async with self.limiter:
                self.requests += 1
                try:
                    async with self.client.stream("GET", url) as response:
                        if response.status_code < 400:
                            size = 0
                            with dest.open("wb") as handle:
                                async for chunk in response.aiter_bytes(chunk_size):
                                    handle.write(chunk)
                                    size += len(chunk)
                            return size
                        last = f"HTTP {response.status_code}"
                        if response.status_code not in RETRY_STATUSES:
                            raise SourceError(f"{self.source}: GET {where} failed: {last}")
                        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                except httpx.TransportError as exc:
                    last = type(exc).__name__
            if attempt < self.max_retries:
                self.retries += 1
                await asyncio.sleep(backoff_delay(attempt, retry_after, base=self.backoff_base_s))
        raise SourceError(
            f"{self.source}: GET {where} still failing after {self.max_retries + 1} attempts ({last}); "
            "the source is down or refusing requests, try again later"
        )
