"""The store: every record between stages, the response cache and small pieces of run state, in one
SQLite file or PostgreSQL database (`Store`)."""

from __future__ import annotations

from livemed.records.rows import StoredRow, naive_utc, stored_row
from livemed.store.cache import ResponseCache
from livemed.store.connect import DEFAULT_LOCK_TIMEOUT, display_url, resolve_url
from livemed.store.maintenance import SCHEMA_VERSION
from livemed.store.records import RecordTable
from livemed.store.state import RunState

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "SCHEMA_VERSION",
    "Store",
    "StoredRow",
    "display_url",
    "naive_utc",
    "resolve_url",
    "stored_row",
]


class Store(RecordTable, ResponseCache, RunState):
    """Typed persistence for livemed records: the record table (`records`), the response cache
    (`cache`) and run state (`state`), on one engine (`base`)."""
