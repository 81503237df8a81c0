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

    `failures`: the first that many requests answer 503 (then `status`).
    """

    results: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
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
                self.end_headers()
                return
            size = int(parse_qs(url.query).get("pageSize", ["25"])[0])
            body = json.dumps({"hitCount": len(fake.results), "resultList": {"result": fake.results[:size]}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

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
