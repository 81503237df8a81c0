"""A fake OpenAI-compatible server: real HTTP on 127.0.0.1, scriptable per request.

It serves `POST /v1/chat/completions` and `GET /v1/models`, plus `GET /_stats` (request count,
distinct request bodies, the most chat requests answered at once: `max_in_flight`) and
`POST /_reset` for out-of-process use. Each chat request takes the next scripted `Behavior` (or the
`responder`'s, or the default), which can add latency, answer 429 with Retry-After,
500, hang, send a malformed JSON body or any text, or replay a reply shape recorded from a real
server (`recorded("vllm_reasoning_content")`, files in `tests/fixtures/replies/`).

```python
with FakeOpenAIServer() as server:                 # a thread with its own event loop
    server.script(Behavior(status=429, retry_after=0.2), Behavior(text="hello"))
    ...  # point a model at server.base_url
    assert len(server.requests) == 2
```
Run it as a separate process (for benchmarks): `python -m tests.fakes.openai_server --latency 0.1`;
add `--judge` to answer livemed's grading prompts with valid verdicts (`judge_responder()`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from livemed.common.prompts import parse_blocks


@dataclass(frozen=True)
class Behavior:
    """What the server does with one chat request."""

    text: str = "ok"
    status: int = 200
    latency: float = 0.0
    retry_after: float | None = None
    retry_after_ms: float | None = None
    hang: bool = False
    malformed: bool = False
    error_message: str = "fake server error"
    finish_reason: str = "stop"
    prompt_tokens: int = 11
    completion_tokens: int | None = None
    body: dict[str, Any] | None = None  # send this JSON body as it is (with `status` and `headers`)
    body_text: str | None = None  # send this text as the body
    truncate: bool = False  # announce the whole body, send half of it, close the connection
    headers: tuple[tuple[str, str], ...] = ()


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "replies"


def recorded(name: str) -> Behavior:
    """The reply shape in `tests/fixtures/replies/NAME.json` (see the README there) as a Behavior."""
    shape = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    headers = tuple((str(k), str(v)) for k, v in (shape.get("headers") or {}).items())
    return Behavior(
        status=int(shape.get("status", 200)),
        body=shape.get("body"),
        body_text=shape.get("body_text"),
        truncate=bool(shape.get("truncate", False)),
        headers=headers,
    )


def recorded_shapes() -> list[str]:
    return sorted(path.stem for path in FIXTURES.glob("*.json"))


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float
    raw: bytes = b""  # the request body's bytes as they came (chat requests)


Responder = Callable[[dict[str, Any]], Behavior]


@dataclass
class FakeOpenAIServer:
    """The server; use as a context manager (thread) or `serve()` it in a process of its own."""

    default: Behavior = field(default_factory=Behavior)
    responder: Responder | None = None
    rate_429: float = 0.0
    rate_500: float = 0.0
    random_retry_after: float = 0.0
    seed: int = 0
    record: bool = True
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    count: int = 0
    in_flight: int = 0  # chat requests being answered now
    max_in_flight: int = 0  # the most chat requests ever answered at once
    first_at: float | None = None  # time.monotonic() of the first chat request (since the last reset)
    last_done_at: float | None = None  # ... and of the last chat reply
    distinct: set[str] = field(default_factory=set)  # digests of the distinct chat request bodies
    # Hold every chat reply until this many chat requests are in flight at once (then answer them all,
    # and every later one at once): a client's concurrency shown by a state, not by a latency it usually
    # fills. A client that never gets there is answered after `hold_s`, with `max_in_flight` below it.
    hold_until_in_flight: int = 0
    hold_s: float = 20.0
    # An endpoint that takes this many chat requests at once (0: any number) and answers the others 429
    # with Retry-After `random_retry_after`, as a provider's concurrency limit does.
    max_concurrent: int = 0
    refused: int = 0  # chat requests answered 429 for being over `max_concurrent`

    def __post_init__(self) -> None:
        self._script: deque[Behavior] = deque()
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._crowded: asyncio.Event | None = None

    # ------------------------------------------------------------------ scripting

    def script(self, *behaviors: Behavior) -> None:
        """Queue behaviours for the next chat requests, in order (then the default applies)."""
        with self._lock:
            self._script.extend(behaviors)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next_behavior(self, body: dict[str, Any]) -> Behavior:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(body)
        roll = self._random.random()
        if roll < self.rate_429:
            return Behavior(status=429, latency=self.default.latency, retry_after=self.random_retry_after)
        if roll < self.rate_429 + self.rate_500:
            return Behavior(status=500, latency=self.default.latency)
        return self.default

    # ------------------------------------------------------------------ handlers

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.first_at is None:
            self.first_at = time.monotonic()
        try:
            await self._hold()
            return await self._answer(request)
        finally:
            self.in_flight -= 1
            self.last_done_at = time.monotonic()

    async def _hold(self) -> None:
        if not self.hold_until_in_flight or self._crowded is None:
            return
        if self.in_flight >= self.hold_until_in_flight:
            self._crowded.set()
        with contextlib.suppress(TimeoutError):  # never that many at once: answer, max_in_flight says so
            await asyncio.wait_for(self._crowded.wait(), timeout=self.hold_s)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.distinct.add(hashlib.sha256(raw).hexdigest())
        try:
            body: dict[str, Any] | None = json.loads(raw)
        except ValueError:
            body = None
        self._record(request, body, raw)
        if not isinstance(body, dict):
            return _error(400, "request body is not JSON")
        behavior = self._next_behavior(body)
        if self.max_concurrent and self.in_flight > self.max_concurrent:
            self.refused += 1
            behavior = Behavior(status=429, retry_after=self.random_retry_after)
        if behavior.latency:
            await asyncio.sleep(behavior.latency)
        if behavior.hang:
            assert self._stopping is not None
            await self._stopping.wait()
            return _error(503, "server shutting down")
        if behavior.body is not None or behavior.body_text is not None:
            return await _send_recorded(request, behavior)
        if behavior.status != 200:
            return _error(behavior.status, behavior.error_message, _retry_headers(behavior))
        if behavior.malformed:
            return web.Response(
                text='{"id": "chatcmpl-broken", "choices": [', content_type="application/json"
            )
        return web.Response(body=json.dumps(_completion(body, behavior)), content_type="application/json")

    async def _models(self, request: web.Request) -> web.StreamResponse:
        self._record(request, None)
        data = [{"id": "fake-gpt", "object": "model", "created": 0, "owned_by": "livemed-tests"}]
        return web.json_response({"object": "list", "data": data})

    async def _stats(self, _request: web.Request) -> web.StreamResponse:
        stats = {"requests": self.count, "distinct": len(self.distinct), "max_in_flight": self.max_in_flight}
        return web.json_response({**stats, "first_at": self.first_at, "last_done_at": self.last_done_at})

    async def _reset(self, _request: web.Request) -> web.StreamResponse:
        self.count = self.max_in_flight = 0
        self.first_at = self.last_done_at = None
        self.requests.clear()
        self.distinct.clear()
        return web.json_response({"requests": 0})

    def _record(self, request: web.Request, body: dict[str, Any] | None, raw: bytes = b"") -> None:
        self.count += 1
        if self.record:
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.requests.append(
                RecordedRequest(request.method, request.path, headers, body, time.monotonic(), raw)
            )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/_stats", self._stats)
        app.router.add_post("/_reset", self._reset)
        return app

    # ------------------------------------------------------------------ lifecycle

    async def start_async(self) -> None:
        self._stopping = asyncio.Event()
        self._crowded = asyncio.Event()
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def stop_async(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def __enter__(self) -> FakeOpenAIServer:
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:
                failure.append(exc)
                loop.close()
                return
            finally:
                ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai-server", daemon=True)
        self._thread.start()
        if not ready.wait(10) or failure:
            raise RuntimeError(f"fake OpenAI server did not start: {failure}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        assert self._thread is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def _send_recorded(request: web.Request, behavior: Behavior) -> web.StreamResponse:
    """A recorded shape: its status, headers and body; `truncate` cuts the body off mid-way."""
    text = behavior.body_text if behavior.body is None else json.dumps(behavior.body)
    data = (text or "").encode()
    headers = dict(behavior.headers)
    if not behavior.truncate:
        return web.Response(
            status=behavior.status, body=data, headers=headers, content_type="application/json"
        )
    response = web.StreamResponse(status=behavior.status, headers=headers)
    response.content_type = "application/json"
    response.content_length = len(data)
    await response.prepare(request)
    await response.write(data[: len(data) // 2])
    assert request.transport is not None
    request.transport.close()  # the rest never comes
    return response


def _retry_headers(behavior: Behavior) -> dict[str, str]:
    headers = {}
    if behavior.retry_after is not None:
        headers["Retry-After"] = f"{behavior.retry_after:g}"
    if behavior.retry_after_ms is not None:
        headers["retry-after-ms"] = f"{behavior.retry_after_ms:g}"
    # The official client would honour this itself; livemed's engine owns retries.
    headers["x-should-retry"] = "true"
    return headers


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": "fake_error", "param": None, "code": str(status)}}
    return web.Response(
        status=status, body=json.dumps(body), content_type="application/json", headers=headers
    )


def _completion(request: dict[str, Any], behavior: Behavior) -> dict[str, Any]:
    n = int(request.get("n") or 1)
    completion_tokens = behavior.completion_tokens
    if completion_tokens is None:
        completion_tokens = max(1, len(behavior.text.split()))
    choices = [
        {
            "index": i,
            "message": {"role": "assistant", "content": behavior.text if i == 0 else f"{behavior.text} #{i}"},
            "finish_reason": behavior.finish_reason,
            "logprobs": None,
        }
        for i in range(n)
    ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake-gpt"),
        "choices": choices,
        "usage": {
            "prompt_tokens": behavior.prompt_tokens,
            "completion_tokens": completion_tokens * n,
            "total_tokens": behavior.prompt_tokens + completion_tokens * n,
            # as api.openai.com sends them (openai/simple-evals' HealthBench runner reads both)
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
    }


def judge_reply(prompt: str) -> str:
    """A valid verdict for one of livemed's grading prompts (`livemed.grade.grader`).

    The prompt is read as the offline baselines read theirs, by its data blocks (`parse_blocks`). A
    batched prompt (criterion blocks labelled with an `id`) gets `{"verdicts": [...]}` with one verdict
    per numbered criterion; any other prompt gets `{"explanation": ..., "criteria_met": ...}`. The
    verdict is deterministic and the same in both modes: met for a criterion with positive points, not
    met for one with negative points (the response avoids the bad thing).
    """
    criteria = [b for b in parse_blocks(prompt) if b.name == "criterion"]
    if any("id" in b.attrs for b in criteria):
        verdicts = [
            {
                "id": int(b.attrs["id"]),
                "explanation": f"fake verdict {b.attrs['id']}",
                "criteria_met": not b.attrs.get("points", "").startswith("-"),
            }
            for b in criteria
        ]
        return json.dumps({"verdicts": verdicts})
    met = not (criteria and criteria[0].attrs.get("points", "").startswith("-"))
    return json.dumps({"explanation": "fake verdict", "criteria_met": met})


def judge_responder(latency: float = 0.0) -> Responder:
    """A responder that grades: `judge_reply()` to the last user message, after `latency` seconds.

    Usage is counted in whitespace-separated words: prompt tokens over every message of the request,
    completion tokens over the reply.
    """

    def respond(body: dict[str, Any]) -> Behavior:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        words = sum(len(str(m.get("content", "")).split()) for m in messages)
        return Behavior(text=judge_reply(users[-1] if users else ""), latency=latency, prompt_tokens=words)

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--rate-429", type=float, default=0.0)
    parser.add_argument("--rate-500", type=float, default=0.0)
    parser.add_argument("--retry-after", type=float, default=0.0, help="Retry-After seconds on random 429s")
    parser.add_argument("--text", default="ok")
    parser.add_argument(
        "--judge", action="store_true", help="answer grading prompts with verdicts (no random faults)"
    )
    args = parser.parse_args()
    if args.judge and (args.rate_429 or args.rate_500):
        parser.error("--judge does not combine with --rate-429/--rate-500")
    server = FakeOpenAIServer(
        default=Behavior(text=args.text, latency=args.latency),
        responder=judge_responder(args.latency) if args.judge else None,
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        random_retry_after=args.retry_after,
        port=args.port,
        record=False,
    )

    async def serve() -> None:
        await server.start_async()
        print(f"listening {server.base_url}", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
