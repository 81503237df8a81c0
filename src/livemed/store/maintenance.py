"""The store's upkeep: its schema version and the migrations from older ones, and SQLite's planner
statistics (refreshed when a store has grown, `Store.optimize`)."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

SCHEMA_VERSION = 3

_UNBOUNDED = (
    ("records", "id"),
    ("records", "parent_id"),
    ("run_state", "key"),
    ("doc_signatures", "doc_id"),
    ("response_cache", "model"),
)


def _ids_become_text(conn: Connection) -> None:
    """1 → 2: ids and keys become unbounded TEXT (PostgreSQL enforced VARCHAR(512); SQLite never did)."""
    if conn.dialect.name == "postgresql":
        for table, column in _UNBOUNDED:
            conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE TEXT"))


def _parent_index_with_id(conn: Connection) -> None:
    """2 → 3: the parent index gains `id`, so a parent's records come in id order from the index."""
    conn.execute(sa.text("DROP INDEX IF EXISTS ix_records_kind_parent"))
    conn.execute(sa.text("CREATE INDEX ix_records_kind_parent ON records (kind, parent_id, id)"))


# Migrations from version N to N+1, applied in order when an older store is opened.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _ids_become_text, 2: _parent_index_with_id}
SCHEMA_LOCK = 0x6C6976656D6564  # PostgreSQL advisory lock held while the schema is created or migrated

ANALYZE_FROM = 10_000  # records: below this a SQLite store needs no statistics


def refresh_statistics(conn: Connection, *, force: bool = False) -> None:
    """ANALYZE a SQLite store (sampled) when it is large and its statistics are missing or stale;
    `force`: whenever it is large (after a migration rebuilt an index)."""
    rows = conn.exec_driver_sql("SELECT max(rowid) FROM records").scalar() or 0
    if rows < ANALYZE_FROM:
        return
    taken = None
    if conn.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").first():
        stat = conn.exec_driver_sql(
            "SELECT stat FROM sqlite_stat1 WHERE idx = 'sqlite_autoindex_records_1'"
        ).scalar()
        taken = int(str(stat).split()[0]) if stat else None
    if force or taken is None or rows > 4 * taken:
        wait = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
        conn.exec_driver_sql("PRAGMA busy_timeout=0")  # never wait for another process's lock
        try:
            conn.exec_driver_sql("PRAGMA analysis_limit=1000")
            conn.exec_driver_sql("ANALYZE")
        finally:
            conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait or 0)}")
