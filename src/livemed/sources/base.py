"""What every source shares: the protocol, settings base, rejections and date helpers.

A source is an object with a `name` and an async generator `harvest(since, until, *, limit)` that
yields `Doc` records published from `since` to `until`, both included (the caller applies the
exclusive cutoff), and a `Rejection` (stage "harvest") for each malformed record, which it skips
without stopping. A source that cannot be reached at all raises `SourceError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from livemed.records import Doc, Rejection

DocOrRejection = Doc | Rejection


@runtime_checkable
class Source(Protocol):
    """A dated document source."""

    name: str
    ordered: (
        bool  # True when docs come in ascending publication order (a --limit run may advance the watermark)
    )

    def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]: ...


class SourceSettings(BaseModel):
    """Settings every source accepts under `[sources.NAME]`."""

    model_config = ConfigDict(extra="forbid")

    description: ClassVar[str] = ""
    max_record_bytes: int = Field(default=1_000_000, ge=1_000, description="larger records are rejected")


class HttpSettings(SourceSettings):
    """Settings of a source behind an HTTP API."""

    base_url: str
    requests_per_second: float = Field(default=3.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    timeout_s: float = Field(default=30.0, gt=0)
    backoff_base_s: float = Field(default=1.0, ge=0)
    page_size: int = Field(default=100, ge=1, le=1000)
    api_key_env: str | None = Field(default=None, description="environment variable holding an API key")


def rejection(source: str, source_id: str, reason: str, detail: str = "", **extra: Any) -> Rejection:
    """A harvest-stage Rejection for one malformed record of `source`."""
    return Rejection(
        stage="harvest",
        reason=reason,
        detail=detail[:500],
        record_kind="doc",
        record_id=f"{source}:{source_id or 'unknown'}",
        source=source,
        **extra,
    )


def too_large(source: str, source_id: str, size: int, limit: int) -> Rejection | None:
    """A `too_large` rejection when a record is over `limit` bytes, else None."""
    if size <= limit:
        return None
    return rejection(source, source_id, "too_large", f"{size:,} bytes, over the {limit:,}-byte limit")


def parse_date(value: object) -> datetime | None:
    """An aware UTC datetime from an ISO date/datetime string, a date, or epoch seconds; None if unusable."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(), UTC)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def day_start(day: date) -> datetime:
    return datetime.combine(day, time(), UTC)
