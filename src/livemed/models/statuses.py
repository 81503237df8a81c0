"""Error replies of OpenAI-compatible endpoints → `TransientModelError` / `FatalModelError`.

- 408, 409, 429 and 5xx are transient. A 429's wait comes from `retry-after-ms` / `Retry-After`
  headers, else from the body: a `retry_after` / `retry_after_seconds` field, a Google-style
  `retryDelay` ("20s"), an `X-RateLimit-Reset` (epoch seconds or milliseconds) in OpenRouter's
  `error.metadata.headers`, or a message like "Please try again in 20s" (OpenAI, Groq).
- 401/403 (refused key) and 404 (unknown model) are fatal for every later call of the model;
  402 (insufficient credits, OpenRouter) too, with a message that says so.
- An HTTP 200 whose body is `{"error": {...}}` is classified by the error's code as if it were
  the status, keeping the provider's message and code.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from livemed.models.base import FailureReason, FatalModelError, TransientModelError

_TRY_AGAIN = re.compile(
    r"try again in\s+(?:(\d+(?:\.\d+)?)\s*m(?:in(?:utes?)?)?(?![a-z])\s*)?"
    r"(?:(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b)?",
    re.IGNORECASE,
)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$")
RETRYABLE = frozenset({408, 409, 429})


def transient_status(status: int) -> bool:
    return status in RETRYABLE or status >= 500


def classify(
    status: int,
    where: str,
    message: str,
    *,
    retry_after: float | None = None,
    key_hint: str = "",
    reason: FailureReason | None = None,
) -> TransientModelError | FatalModelError:
    """The model error for an error `status` (HTTP, or the code of an error body) at `where`."""
    if transient_status(status):
        return TransientModelError(
            f"{where}: {message}", status=status, retry_after=retry_after, reason=reason
        )
    if status in (401, 403):
        hint = key_hint or "the endpoint wants a key"
        return FatalModelError(
            f"{where}: the endpoint refused the request ({hint})", status=status, model_wide=True
        )
    if status == 402:
        return FatalModelError(
            f"{where}: insufficient credits (402): {message}; add credits or raise the key's limit, "
            "then run again",
            status=status,
            model_wide=True,
        )
    return FatalModelError(f"{where}: {message}", status=status, model_wide=status == 404, reason=reason)


def error_message(body: object, fallback: str, redact: Callable[[str], str]) -> str:
    """The provider's message in an error body (`{"error": {"message": …}}` or `{"message": …}`),
    with its code, on one line of at most 300 characters, key scrubbed."""
    error = body.get("error") if isinstance(body, dict) else None
    inner = error if isinstance(error, dict) else body if isinstance(body, dict) else {}
    message = inner.get("message") if isinstance(inner, dict) else None
    if message:
        text = str(message)
    elif isinstance(error, str):
        text = error
    else:
        text = str(body) if body else fallback
    code = inner.get("code") if isinstance(inner, dict) else None
    if code is not None and str(code) not in text:
        text = f"{text} (code {code})"
    text = redact(" ".join(text.split()))
    return text if len(text) <= 300 else text[:297] + "…"


def body_error(
    data: dict[str, Any], where: str, redact: Callable[[str], str]
) -> TransientModelError | FatalModelError | None:
    """The error an HTTP-200 body stands for when it is an `{"error": …}` object without choices."""
    error = data.get("error")
    if error is None or data.get("choices"):
        return None
    code = error.get("code") if isinstance(error, dict) else None
    try:
        status = int(code) if code is not None else 0
    except (TypeError, ValueError):
        status = 0  # a textual code ("rate_limit_exceeded", …): judged by its name below
    if not 100 <= status < 600:
        name = str(code or (error.get("type") if isinstance(error, dict) else "") or "").lower()
        status = 429 if "rate" in name else 500 if ("server" in name or "overload" in name) else 400
    message = "error body in an HTTP 200 reply: " + error_message(data, "no message", redact)
    wait = retry_after_from_body(data)
    return classify(status, where, message, retry_after=wait, reason="provider_error")


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    return retry_after_seconds(headers.get("retry-after"))


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After value as seconds: a number, or an HTTP date (None when absent or unreadable)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def retry_after_from_body(body: object) -> float | None:
    """Seconds to wait that a 429 states only in its body (see the module docstring), or None."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    inner: dict[str, Any] = error if isinstance(error, dict) else body
    for found in (_field_wait(inner), _field_wait(body), _google_wait(inner), _reset_wait(inner)):
        if found is not None:
            return found
    return _message_wait(str(inner.get("message") or ""))


def _field_wait(values: dict[str, Any]) -> float | None:
    metadata = values.get("metadata")
    for source in (values, metadata if isinstance(metadata, dict) else {}):
        for name in ("retry_after", "retry_after_seconds", "retryAfter"):
            seconds = _seconds(source.get(name))
            if seconds is not None:
                return seconds
    return None


def _google_wait(values: dict[str, Any]) -> float | None:
    details = values.get("details")
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and "retryDelay" in detail:
            return _seconds(detail["retryDelay"])
    return None


def _reset_wait(values: dict[str, Any]) -> float | None:
    metadata = values.get("metadata")
    headers = metadata.get("headers") if isinstance(metadata, dict) else None
    if not isinstance(headers, dict):
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    reset = lowered.get("x-ratelimit-reset")
    try:
        moment = float(reset) if reset is not None else None
    except (TypeError, ValueError):
        return _seconds(reset)
    if moment is None:
        return None
    if moment > 1e11:  # epoch milliseconds
        moment /= 1000
    if moment > 1e9:  # epoch seconds
        return max(0.0, moment - time.time())
    return max(0.0, moment)  # already a number of seconds


def _message_wait(message: str) -> float | None:
    found = _TRY_AGAIN.search(message)
    if found is None or not (found.group(1) or found.group(2)):
        return None
    minutes = float(found.group(1) or 0)
    seconds = float(found.group(2) or 0)
    if found.group(3) == "ms":
        seconds /= 1000
    return minutes * 60 + seconds


def _seconds(value: object) -> float | None:
    """Seconds from a number or a "20s" / "250ms" string."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return max(0.0, float(value))
    found = _DURATION.match(str(value))
    if found is None:
        return None
    amount = float(found.group(1))
    return amount / 1000 if found.group(2) == "ms" else amount
