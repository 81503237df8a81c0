"""A real HTTP server on 127.0.0.1 that replays canned API replies (for source tests).

`handler(path, query) -> Reply` decides each answer; every request is recorded in `requests`.
Runs `http.server.ThreadingHTTPServer` in a daemon thread; use it as a context manager.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200, **headers: str) -> Reply:
        return cls(status, json.dumps(data).encode(), {"Content-Type": "application/json", **headers})

    @classmethod
    def xml(cls, data: bytes | str, status: int = 200) -> Reply:
        body = data.encode() if isinstance(data, str) else data
        return cls(status, body, {"Content-Type": "text/xml"})


Handler = Callable[[str, dict[str, str]], Reply]


class ReplayServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[str, dict[str, str]]] = []
        server = self

        class _Request(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                server.requests.append((parts.path, query))
                reply = server.handler(parts.path, query)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Request)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
