"""A record as the store's `records` table keeps it, made without importing the store (SQLAlchemy is a
third of a second): import workers make rows where they parse, before the store is opened."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from livemed.records import RECORD_TYPES, Record


def naive_utc(moment: datetime | None) -> datetime | None:
    """Times are stored as naive UTC, identically on SQLite and PostgreSQL."""
    if moment is None or moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


class StoredRow(NamedTuple):
    """A record as the `records` table keeps it (the write time is added when it is written)."""

    kind: str
    id: str
    parent_id: str | None
    published_at: datetime | None  # naive UTC
    payload: str  # the record's `model_dump_json()`


def stored_row(record: Record) -> StoredRow:
    """The row of a record (`Store.put_rows` writes it)."""
    if record.kind not in RECORD_TYPES:
        raise TypeError(f"{type(record).__name__} is not a stored record type")
    return StoredRow(
        record.kind, record.id, record.parent_id, naive_utc(record.published_at), record.model_dump_json()
    )
