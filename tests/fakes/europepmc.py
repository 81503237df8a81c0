"""A local stand-in for Europe PMC's REST search (real HTTP on 127.0.0.1, in a thread)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class FakeEuropePMC:
    """Serves `results` for GET /search; `status` other than 200 answers with that error.

    `failures`: the first that many requests answer 503 (then `status`). `err`: answer HTTP 200 with
    Europe PMC's error body `{"errCode": ..., "errMsg": ...}` instead of results. Replies follow the
    observed shape: `version`, `hitCount`, `nextCursorMark`, `request`, `resultList.result`; a 503 is
    the plain-text maintenance notice.
    """

    results: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    err: dict[str, Any] | None = None
    failures: int = 0
    requests: list[dict[str, list[str]]] = field(default_factory=list)
    user_agents: list[str] = field(default_factory=list)
    base_url: str = ""


@contextmanager
def europepmc_server(fake: FakeEuropePMC) -> Iterator[FakeEuropePMC]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            fake.requests.append(parse_qs(url.query))
            fake.user_agents.append(self.headers.get("User-Agent", ""))
            status = 503 if fake.failures >= len(fake.requests) else fake.status
            if url.path != "/search" or status != 200:
                self.send_response(404 if url.path != "/search" else status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                if url.path == "/search":
                    self.wfile.write(b"This API is temporarily unavailable due to maintenance.")
                return
            self._json(fake.err if fake.err is not None else _page(parse_qs(url.query), fake.results))

        def _json(self, data: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(data).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _page(query: dict[str, list[str]], results: list[dict[str, Any]]) -> dict[str, Any]:
    size = int(query.get("pageSize", ["25"])[0])
    cursor = query.get("cursorMark", ["*"])[0]
    return {
        "version": "6.9",
        "hitCount": len(results),
        "nextCursorMark": "AoIIP4AAACgxMjM=" if len(results) > size else cursor,
        "request": {
            "queryString": query.get("query", [""])[0],
            "resultType": query.get("resultType", ["lite"])[0],
            "cursorMark": cursor,
            "pageSize": size,
            "synonym": False,
        },
        "resultList": {"result": results[:size]},
    }
