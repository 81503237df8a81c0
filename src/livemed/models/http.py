"""The HTTP path of OpenAI-compatible models: one aiohttp session per model and event loop.

`POST {base_url}/chat/completions` with a JSON body livemed builds itself and the bearer key; the
reply comes back as (status, headers, body bytes) for `models.openai` to read. Measured against the
official `openai` client (its aiohttp backend, `post()` with a pre-serialised body) on the fake
server, this path costs a fraction of the client's CPU per call, and it does not import the SDK
(~0.8 s of CPU at start-up). A body cut short is `Truncated`; a connection that cannot be made (in
`timeout_s`) or breaks is `Unreachable`. How long a reply may take is the engine's to bound (its
`asyncio.timeout` of `timeout_s` around every attempt, `Engine._attempt`): a total timeout here too
would arm a second timer per request for the same limit. The URL is parsed once, not per request.
The pool keeps one connection alive per allowed concurrent call; a process whose limit on open files
is short of that raises it (up to the hard limit), and a pool that still does not fit gets the files
left, so its calls queue for a connection rather than fail (`connection_room`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import aiohttp
import yarl

from livemed import __version__


class Truncated(Exception):
    """The body ended before its announced length (or final chunk)."""


class Unreachable(Exception):
    """The endpoint could not be reached, or the connection broke before a reply."""


class Transport:
    """An aiohttp session bound to one event loop (closed with `close()`, or when the loop shuts down)."""

    def __init__(self, url: str, headers: Mapping[str, str], *, concurrency: int, timeout_s: float) -> None:
        self.url = yarl.URL(url)
        self.headers = {"Content-Type": "application/json", "User-Agent": f"livemed/{__version__}", **headers}
        self.connections = connection_room(max(100, concurrency))  # given back when the session closes
        connector = aiohttp.TCPConnector(limit=self.connections, limit_per_host=0, keepalive_timeout=30)
        # the headers are the session's own: each request copies them, nothing to merge per call
        self.session = aiohttp.ClientSession(
            connector=connector,
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout_s),
            raise_for_status=False,
            cookie_jar=aiohttp.DummyCookieJar(),  # an API sets no cookies worth keeping: none to parse
        )
        self.loop = asyncio.get_running_loop()
        self._closer: AsyncGenerator[None, None] | None = _close_at_shutdown(self)

    async def start(self) -> Transport:
        assert self._closer is not None
        await anext(self._closer)  # the loop closes suspended async generators when it shuts down
        return self

    async def post(self, body: bytes) -> tuple[int, Mapping[str, str], bytes]:
        try:
            async with self.session.post(self.url, data=body) as response:
                return response.status, response.headers, await response.read()
        except aiohttp.ClientPayloadError as exc:
            raise Truncated(str(exc)) from None
        except (aiohttp.ClientConnectorError, aiohttp.ClientOSError) as exc:
            cause: Any = getattr(exc, "os_error", None) or exc
            raise Unreachable(str(getattr(cause, "strerror", None) or cause) or type(exc).__name__) from None
        except aiohttp.ClientError as exc:
            raise Unreachable(str(exc) or type(exc).__name__) from None

    def is_closed(self) -> bool:
        return self.session.closed

    async def close(self) -> None:
        closer, self._closer = self._closer, None
        if closer is not None:
            await closer.aclose()


FILES_SPARE = 256  # open files kept for everything else (the store, logs, the loop, imports)
_pooled = 0  # connections the pools of this process may open


def connection_room(wanted: int) -> int:
    """How many connections a new pool of `wanted` may open. The soft limit on open files is raised
    (never past the hard limit) to hold every pool's connections and `FILES_SPARE` more; when the hard
    limit is short, the pool gets what is left (at least 8): aiohttp queues a call for a free
    connection, so a smaller pool makes calls wait, never fail with "too many open files"."""
    global _pooled
    room = wanted
    if sys.platform != "win32":
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        needed = _pooled + wanted + FILES_SPARE
        if soft != resource.RLIM_INFINITY and soft < needed:
            raised = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            room = max(8, min(wanted, raised - _pooled - FILES_SPARE))
    _pooled += room
    return room


def _give_back(connections: int) -> None:
    global _pooled
    _pooled -= connections


async def _close_at_shutdown(transport: Transport) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await transport.session.close()
        _give_back(transport.connections)
