"""Store URLs and engines: SQLite (WAL, BEGIN IMMEDIATE writes, a busy timeout) or PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from livemed.errors import ConfigError, MissingDependencyError, StoreOpenError

DEFAULT_LOCK_TIMEOUT = 30.0
# The page size of a SQLite store livemed creates (an existing file keeps its own). A record's payload
# is a few KB of JSON: at SQLite's 4 KiB default a rubric fills a page, so a 10k-example import wrote
# an 86 MB file in 76,000 writes; at 16 KiB it is 59 MB and the writer's CPU ~0.35 s less
# (docs/benchmarks.md).
SQLITE_PAGE_SIZE = 16384


def resolve_url(location: str | Path) -> str:
    """A SQLAlchemy URL from a path or URL; `postgresql://` gets the psycopg 3 driver."""
    text = str(location)
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    return text


def sqlite_file(location: str | Path) -> Path | None:
    """The file of a SQLite store, or None (an in-memory store, or a server)."""
    url = sa.make_url(resolve_url(location))
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database)


def display_url(url: str) -> str:
    """The URL with any password hidden."""
    return sa.make_url(url).render_as_string(hide_password=True)


def env_lock_timeout() -> float:
    raw = os.environ.get("LIVEMED_STORE_TIMEOUT")
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"LIVEMED_STORE_TIMEOUT must be a number of seconds, got {raw!r}") from None


def make_engine(url: str, lock_timeout: float) -> Engine:
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return sqlite_engine(url, lock_timeout)
    if parsed.get_backend_name() == "postgresql":
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise MissingDependencyError("psycopg", "postgres") from None
        engine = sa.create_engine(url, pool_pre_ping=True)
        sa.event.listen(engine, "connect", _on_postgres_connect)
        return engine
    raise ConfigError(f"unsupported store URL {display_url(url)!r}: use a file path or postgresql+psycopg://")


def sqlite_engine(url: str, lock_timeout: float) -> Engine:
    database = sa.make_url(url).database
    if database and database != ":memory:":
        folder = Path(database).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise StoreOpenError(
                f"cannot open store {display_url(url)}: cannot create {folder}: {reason}"
            ) from None
    engine = sa.create_engine(url, connect_args={"timeout": lock_timeout})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # livemed issues BEGIN itself (see _on_begin)
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")  # before WAL: a new file only
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(lock_timeout * 1000)}")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Reads run in autocommit; writes take the write lock up front, so the busy timeout applies.
        if conn.get_execution_options().get("livemed_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _on_postgres_connect(dbapi_conn: Any, _record: Any) -> None:
    """A new PostgreSQL connection's settings.

    - psycopg sends a Python list (the store's `= ANY(array)` lookups) in PostgreSQL's binary array
      format rather than as array text: no quoting pass over each element, half the client time of a
      500-id lookup.
    - Statements are planned without their parameters' values (`plan_cache_mode =
      force_generic_plan`, and planned once where psycopg prepares them). A plan priced with a
      lookup's values uses the table's statistics, and those lag the writes of a run: autovacuum
      analyses a table after a tenth of it changed, at most once a minute. `grade` writes a kind the
      last ANALYZE saw no row of, so its lookups by answer were planned as a walk of every grade of
      the kind with the answers as a filter (18,000 index entries read per lookup by mid-run, 10 s of
      the server's time in one 10k-example run; tests/foundation/test_query_plans.py). A generic
      plan prices each index by its columns alone and finds the answers through the index."""
    from psycopg.types.array import ListBinaryDumper

    dbapi_conn.adapters.register_dumper(list, ListBinaryDumper)
    with dbapi_conn.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
    dbapi_conn.commit()
