"""What guards the review app: a strict CSP on every response, reviewer sessions, CSRF tokens.

A reviewer's session (a cookie signed with a secret made when the server starts, HttpOnly and
SameSite=Strict) holds the reviewer's name, a key derived from their token's hash (so inviting them
again ends the session too) and a CSRF token that every POST must carry, as the form field `csrf` or
the header `X-CSRF-Token`. A request without a session, or a POST without the right CSRF token, gets
one line of text.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from livemed.records import Reviewer
from livemed.store import Store

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    b"content-security-policy": CSP.encode(),
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"no-referrer",  # the invite link carries a token
    b"x-frame-options": b"DENY",
    b"cache-control": b"no-store",
}
NO_SESSION = "no review session: open your invite link (`livemed review invite NAME` prints one)"
BAD_CSRF = "refused: this form's CSRF token is missing or wrong (reload the page and try again)"
COOKIE = "livemed_review"


class SecurityHeaders:
    """ASGI middleware: the CSP and the other security headers on every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in HEADERS]
                message["headers"] = kept + list(HEADERS.items())
            await send(message)

        await self.app(scope, receive, with_headers)


def session_key(token_sha256: str) -> str:
    """What a session keeps of the reviewer's token: a hash of its hash."""
    return hashlib.sha256(f"livemed-review-session\x1f{token_sha256}".encode()).hexdigest()


def open_session(request: Request, reviewer: Reviewer) -> None:
    """Start `reviewer`'s session (a fresh CSRF token with it)."""
    request.session.clear()
    request.session.update(
        reviewer=reviewer.name, key=session_key(reviewer.token_sha256), csrf=secrets.token_urlsafe(32)
    )


def session_reviewer(request: Request, store: Store) -> str | None:
    """The reviewer of this request's session, or None (no session, or their token was replaced)."""
    name, key = request.session.get("reviewer"), request.session.get("key")
    if not isinstance(name, str) or not isinstance(key, str):
        return None
    reviewer = store.get(Reviewer, f"reviewer:{name}")
    if reviewer is None or reviewer.revoked:
        return None
    return name if hmac.compare_digest(session_key(reviewer.token_sha256), key) else None


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    return token if isinstance(token, str) else ""


def csrf_ok(request: Request, form: Mapping[str, object]) -> bool:
    """Whether a POST carries this session's CSRF token (form field `csrf` or header `X-CSRF-Token`)."""
    expected = csrf_token(request)
    given = form.get("csrf") or request.headers.get("x-csrf-token") or ""
    return bool(expected) and isinstance(given, str) and hmac.compare_digest(given, expected)


def refusal(line: str, status: int) -> PlainTextResponse:
    return PlainTextResponse(line + "\n", status_code=status)
