"""`livemed review serve`: the review web app (Starlette), over a store, bound to 127.0.0.1 by default.

Pages are rendered on the server (Jinja2, autoescaped: harvested text is shown as text, in
`white-space: pre-wrap` blocks) under a strict CSP; `static/review.js` adds the keys (1/2/3 verdicts,
e edit, u undo, j/k next and previous). Every page needs a reviewer's session (`/login?token=…`, the
link `livemed review invite` prints); every POST needs the session's CSRF token (`security.py`).
The app writes through `review/labels.py` only: labels, and rubric versions made by criterion verdicts.
`/results` renders what a `results` function returns (by default `results.WorkerResults`, in a worker
process: label counts, agreement and corrected scores, computed elsewhere and handed in through it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any
from urllib.parse import quote

import jinja2
from anyio import to_thread
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from livemed.errors import UserError
from livemed.records.review import QUEUES, VERDICTS, Queue
from livemed.review.labels import edited, labels_of, put_label, undo_last
from livemed.review.queues import QueueItem, get_item, pending_ids, progress, queue_sizes
from livemed.review.results import WorkerResults
from livemed.review.security import (
    BAD_CSRF,
    COOKIE,
    NO_SESSION,
    SecurityHeaders,
    csrf_ok,
    csrf_token,
    open_session,
    refusal,
    session_reviewer,
)
from livemed.review.tokens import reviewer_for
from livemed.store import Store

Results = Callable[[Store, str | None], Mapping[str, Any]]
Handler = Callable[[Request, str], Awaitable[Response]]
THREADS = 8  # threads for the store's work (anyio's default is 40)
SIZES_TTL_S = 15.0  # queue sizes and /results' verdicts: written by other processes (samples, grades), rarely
STATIC = {"review.js": "text/javascript", "review.css": "text/css"}
TITLES: dict[str, str] = {
    "audit": "Audit sample (blind)",
    "failures": "Ambiguous and unusable grades",
    "criteria": "Rubric criteria",
    "cases": "Rejected cases",
}


@dataclass(frozen=True)
class Shown:
    """`/results`' values, how many of the app's label writes they reflect, and when computed."""

    values: Mapping[str, Any]
    written: int
    started: float


class ReviewApp:
    """The routes' state: the store, the grader under audit, the templates."""

    def __init__(self, store: Store, judge: str | None, results: Results) -> None:
        self.store, self.judge, self.results = store, judge, results
        self.sizes: tuple[float, dict[Queue, int]] | None = None  # (when counted, queue sizes)
        self.shown: Shown | None = None
        self.writes = itertools.count(1)  # the app's label writes (and undos), counted
        self.written = 0
        self.computing: asyncio.Future[Shown] | None = None  # the computation of /results under way
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("livemed.review", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )

    def page(self, request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(csrf=csrf_token(request), titles=TITLES, **values)
        return HTMLResponse(html, status_code=status)

    def authed(self, handler: Handler, *, post: bool = False) -> Callable[[Request], Awaitable[Response]]:
        """`handler(request, reviewer)` behind the session check (and the CSRF check for a POST)."""

        async def endpoint(request: Request) -> Response:
            reviewer = await run_in_threadpool(session_reviewer, request, self.store)
            if reviewer is None:
                return refusal(NO_SESSION, 401)
            if post:
                form = await request.form()
                if not csrf_ok(request, dict(form)):
                    return refusal(BAD_CSRF, 403)
            try:
                return await handler(request, reviewer)
            except UserError as exc:
                return refusal(str(exc), 404 if request.method == "GET" else 400)

        return endpoint

    async def login(self, request: Request) -> Response:
        token = request.query_params.get("token", "")
        reviewer = await run_in_threadpool(reviewer_for, self.store, token) if token else None
        if reviewer is None:
            return refusal(
                "this invite link is unknown or was replaced: " + NO_SESSION.split(": ", 1)[1], 403
            )
        open_session(request, reviewer)
        return RedirectResponse("/", status_code=303)  # the token leaves the address bar

    def progress(self, reviewer: str) -> dict[Queue, tuple[int, int]]:
        """The reviewer's progress; the queues' sizes are recounted at most every `SIZES_TTL_S`."""
        now = time.monotonic()
        if self.sizes is None or now - self.sizes[0] > SIZES_TTL_S:
            self.sizes = (now, queue_sizes(self.store, judge=self.judge))
        return progress(self.store, reviewer, judge=self.judge, sizes=self.sizes[1])

    async def index(self, request: Request, reviewer: str) -> Response:
        done = await run_in_threadpool(self.progress, reviewer)
        return self.page(request, "index.html", reviewer=reviewer, progress=done, queues=QUEUES)

    async def next_item(self, request: Request, reviewer: str) -> Response:
        queue = _queue(request)
        after = request.query_params.get("after")
        ids = await run_in_threadpool(
            pending_ids, self.store, reviewer, queue, judge=self.judge, limit=2 if after else 1
        )
        item_id = next((i for i in ids if i != after), None)
        if item_id is None:
            return self.page(request, "done.html", reviewer=reviewer, queue=queue)
        return RedirectResponse(_item_url(queue, item_id), status_code=303)

    async def previous_item(self, request: Request, reviewer: str) -> Response:
        queue = _queue(request)
        before = request.query_params.get("before", "")
        mine = await run_in_threadpool(labels_of, self.store, reviewer, queue)
        ids = [label.item_id for label in mine]
        if before in ids:
            ids = ids[: ids.index(before)]
        if not ids:
            return RedirectResponse(f"/queue/{queue}", status_code=303)
        return RedirectResponse(_item_url(queue, ids[-1]), status_code=303)

    async def item(self, request: Request, reviewer: str) -> Response:
        queue = _queue(request)
        item_id = request.query_params.get("id", "")
        item: QueueItem = await run_in_threadpool(
            get_item, self.store, reviewer, queue, item_id, judge=self.judge
        )
        verdicts = VERDICTS[queue]
        return self.page(request, "item.html", reviewer=reviewer, item=item, verdicts=verdicts)

    async def label(self, request: Request, reviewer: str) -> Response:
        form = await request.form()
        queue = _queue_named(str(form.get("queue", "")))
        item_id, verdict = str(form.get("item_id", "")), str(form.get("verdict", ""))
        note, text = str(form.get("note", "")).strip(), str(form.get("text", ""))
        await run_in_threadpool(self._put, reviewer, queue, item_id, verdict, note, text)
        return RedirectResponse(f"/queue/{queue}?after={quote(item_id, safe='')}", status_code=303)

    def _put(self, reviewer: str, queue: Queue, item_id: str, verdict: str, note: str, text: str) -> None:
        edit = None
        if queue == "criteria" and verdict == "edit":
            item = get_item(self.store, reviewer, queue, item_id, judge=self.judge)
            assert item.criterion is not None  # a criteria item always has one
            edit = edited(item.criterion, text)
        put_label(self.store, reviewer, queue, item_id, verdict, note, edit=edit, judge=self.judge)
        self.written = next(self.writes)

    async def undo(self, request: Request, reviewer: str) -> Response:
        undone = await run_in_threadpool(undo_last, self.store, reviewer)
        self.written = next(self.writes)
        if undone is None:
            return RedirectResponse("/", status_code=303)
        return RedirectResponse(_item_url(undone.queue, undone.item_id), status_code=303)

    async def results_page(self, request: Request, reviewer: str) -> Response:
        values = await self.current_results()
        return self.page(request, "results.html", reviewer=reviewer, **values)

    async def current_results(self) -> Mapping[str, Any]:
        """`/results`' values, computed again when the app has written a label since they were (or
        `SIZES_TTL_S` after, for labels imported by another process). One computation at a time, in a
        thread: a request that comes while one runs awaits it, holding no thread, and takes its values
        (they miss the labels written while it ran)."""
        shown = self.shown
        if (
            shown is not None
            and shown.written == self.written
            and time.monotonic() - shown.started <= SIZES_TTL_S
        ):
            return shown.values
        task = self.computing
        if task is None:
            task = self.computing = asyncio.ensure_future(run_in_threadpool(self._compute))
        try:
            done = await asyncio.shield(task)
        finally:
            if task.done() and self.computing is task:
                self.computing = None
        if self.shown is None or done.started > self.shown.started:
            self.shown = done
        return done.values

    def _compute(self) -> Shown:
        written, started = self.written, time.monotonic()
        return Shown(self.results(self.store, self.judge), written, started)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """While the app serves from its start, `/results` is computed once (it reads every verdict:
        seconds at 100k grades), so the first reviewers to open it wait for one computation at most.
        The store's work runs in `THREADS` threads: more only wait for the GIL and for the store's
        connections (SQLAlchemy's pool holds 15), and a request waits for a thread holding none."""
        to_thread.current_default_thread_limiter().total_tokens = THREADS
        warming = asyncio.ensure_future(self.current_results())
        try:
            yield
            await warming
        finally:
            if isinstance(self.results, WorkerResults):
                self.results.close()

    async def static(self, request: Request, reviewer: str) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return refusal(f"no static file {name!r}", 404)
        body = files("livemed.review").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name])


def _queue(request: Request) -> Queue:
    return _queue_named(str(request.path_params["queue"]))


def _queue_named(name: str) -> Queue:
    for queue in QUEUES:
        if queue == name:
            return queue
    raise UserError(f"no queue {name!r} (queues: {', '.join(QUEUES)})")


def _item_url(queue: str, item_id: str) -> str:
    return f"/item/{queue}?id={quote(item_id, safe='')}"


def make_app(
    store: Store | str,
    *,
    judge: str | None = None,
    results: Results | None = None,
    secret: str | None = None,
) -> Starlette:
    """The review app over `store` (a Store, or its path or URL); `judge`: the grader whose audit
    sample the audit queue shows (None: the only one stored); `secret` signs the session cookies
    (default: a random one, so a restart ends every session)."""
    opened = store if isinstance(store, Store) else Store(store)
    review = ReviewApp(opened, judge, results or WorkerResults(opened.url, recheck_s=SIZES_TTL_S))
    routes = [
        Route("/login", review.login),
        Route("/", review.authed(review.index)),
        Route("/queue/{queue}", review.authed(review.next_item)),
        Route("/queue/{queue}/back", review.authed(review.previous_item)),
        Route("/item/{queue}", review.authed(review.item)),
        Route("/label", review.authed(review.label, post=True), methods=["POST"]),
        Route("/undo", review.authed(review.undo, post=True), methods=["POST"]),
        Route("/results", review.authed(review.results_page)),
        Route("/static/{name}", review.authed(review.static)),
        Route("/favicon.ico", review.authed(_no_icon)),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(
            SessionMiddleware,
            secret_key=secret or secrets.token_urlsafe(32),
            session_cookie=COOKIE,
            same_site="strict",
            max_age=12 * 3600,
        ),
    ]
    return Starlette(
        routes=routes, middleware=middleware, exception_handlers={404: _not_found}, lifespan=review.lifespan
    )


async def _no_icon(request: Request, reviewer: str) -> Response:
    return Response(status_code=204)  # no icon: a browser's request for one is not an error


async def _not_found(request: Request, exc: Exception) -> Response:
    return refusal(f"no page {request.url.path}", 404)
