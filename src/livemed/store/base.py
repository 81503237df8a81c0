"""The store's core: an engine over a SQLite file (by default) or PostgreSQL (by URL, SQLAlchemy 2
Core), its write transactions, upserts, keyset pages and batched lookups. The record table, the
response cache and run state (`records`, `cache`, `state`) are built on it, as `Store`."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from livemed.errors import StoreLockedError, StoreOpenError, StoreVersionError
from livemed.store import maintenance
from livemed.store.connect import display_url, env_lock_timeout, make_engine, resolve_url
from livemed.store.schema import meta_table, metadata
from livemed.store.statements import (
    CHUNK_POSTGRESQL,
    CHUNK_SQLITE,
    SHAPES,
    TEXT_ARRAY,
    ArrayUpsert,
    Upsert,
    driver_rows,
    placeholders,
)


class StoreBase:
    """An open store: its engine, schema (created or migrated on opening) and the statements every
    part of `Store` writes and reads with."""

    def __init__(self, location: str | Path, *, lock_timeout: float | None = None) -> None:
        self.url = resolve_url(location)
        self.lock_timeout = lock_timeout if lock_timeout is not None else env_lock_timeout()
        self.engine = make_engine(self.url, self.lock_timeout)
        self.dialect = self.engine.dialect.name
        # ids per lookup statement: SQLite binds each as a placeholder of an IN list; PostgreSQL takes
        # one array parameter, so a batch of a stage (512 grades) is one statement, not two
        self.chunk = CHUNK_POSTGRESQL if self.dialect == "postgresql" else CHUNK_SQLITE
        self._upserts: dict[tuple[str, ...], Upsert | ArrayUpsert] = {}
        self._lookups: dict[tuple[str, str, int], str] = {}
        # reads on PostgreSQL in autocommit: see `reading`
        self._reader = (
            self.engine.execution_options(isolation_level="AUTOCOMMIT")
            if self.dialect == "postgresql"
            else self.engine
        )
        self._held = threading.local()  # .conn: this thread's connection of `holding_reads`
        try:
            self._migrate()
        except (sa.exc.OperationalError, sa.exc.DatabaseError, OSError) as exc:
            self.engine.dispose()
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise StoreOpenError(f"cannot open store {display_url(self.url)}: {reason}") from None

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.optimize()
        self.engine.dispose()

    def optimize(self) -> None:
        """Keep SQLite's planner statistics in step with the store: a store of at least
        `ANALYZE_FROM` records with no statistics, or grown 4× since they were taken, is analysed
        (`ANALYZE` sampling `analysis_limit` rows per index: milliseconds). The indexes match the
        queries without statistics (tests/foundation/test_query_plans.py); fresh ones keep a large
        store planned the same way, and stale ones from a small store never mislead a large one.
        Run when a store is closed; one locked by another process is left for the next time.
        PostgreSQL's autovacuum analyses by itself."""
        if self.dialect != "sqlite":
            return
        try:
            with self.engine.connect() as conn:
                maintenance.refresh_statistics(conn)
        except sa.exc.OperationalError:
            pass

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection to read with: the one this thread holds (`holding_reads`), else one from the
        pool. On PostgreSQL it is in autocommit: each statement sees what was committed when it began,
        as the one-statement transactions of READ COMMITTED did, without a BEGIN and a ROLLBACK round
        trip around every lookup (SQLite's reads run in autocommit already: `connect.sqlite_engine`)."""
        held: Connection | None = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        with self._reader.connect() as conn:
            yield conn

    @contextmanager
    def holding_reads(self) -> Iterator[None]:
        """This thread's reads in the body share one connection, checked out once instead of once a
        lookup (on PostgreSQL a checkout is a ping, one round trip): for loops of many small lookups,
        such as planning `grade` over every stored answer. Within another one, the outer connection.
        A generator that reads must not be resumed after the body ends."""
        if getattr(self._held, "conn", None) is not None:
            yield
            return
        with self._reader.connect() as conn:
            self._held.conn = conn
            try:
                yield
            finally:
                self._held.conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def location(self) -> str:
        if self.dialect == "sqlite":
            return self.engine.url.database or ":memory:"
        return display_url(self.url)

    @property
    def schema_version(self) -> int:
        with self.reading() as conn:
            value = conn.execute(
                sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
            ).scalar_one()
        return int(value)

    def _stored_version(self, conn: Connection) -> int | None:
        if not sa.inspect(conn).has_table(meta_table.name):
            return None
        row = conn.execute(
            sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")
        ).scalar_one_or_none()
        return None if row is None else int(row)

    def _migrate(self) -> None:
        """Create or upgrade the schema; opening an up-to-date store takes no write lock."""
        current = maintenance.SCHEMA_VERSION
        with self.engine.connect() as conn:
            if self._stored_version(conn) == current:
                return
        with self.transaction() as conn:
            if self.dialect == "postgresql":  # workers opening a fresh database at once: one creates it
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": maintenance.SCHEMA_LOCK})
            stored = self._stored_version(conn)
            metadata.create_all(conn)
            version = current if stored is None else stored
            if version > current:
                raise StoreVersionError(
                    f"store {self.location} has schema version {version}, newer than this livemed "
                    f"understands ({current}); upgrade livemed"
                )
            while version < current:
                maintenance.MIGRATIONS[version](conn)
                version += 1
            self._upsert(conn, meta_table, [{"key": "schema_version", "value": str(version)}], ["key"])
            if stored is not None and self.dialect == "sqlite":  # statistics for the new indexes
                maintenance.refresh_statistics(conn, force=True)
            elif stored is not None:
                conn.execute(sa.text("ANALYZE records"))

    # ------------------------------------------------------------------ writes

    def transaction(self) -> _WriteTransaction:
        """`with store.transaction() as conn:` — one write transaction (BEGIN IMMEDIATE on SQLite)."""
        return _WriteTransaction(self)

    def _upsert(self, conn: Connection, table: sa.Table, rows: list[dict[str, Any]], keys: list[str]) -> None:
        """Insert rows (dicts naming every column), or update those whose `keys` exist: SQLAlchemy's
        `INSERT … ON CONFLICT DO UPDATE`, compiled once per table and run as one DBAPI `executemany`
        with each value through its column type's bind processor (what `conn.execute` does, without
        building and caching a statement per call)."""
        if not rows:
            return
        columns = [c.name for c in table.columns]
        self._upsert_values(conn, table, [tuple(row[name] for name in columns) for row in rows], keys)

    def _upsert_values(
        self, conn: Connection, table: sa.Table, rows: Sequence[Sequence[Any]], keys: list[str]
    ) -> None:
        """`_upsert` of rows given as value tuples in the table's column order."""
        upsert = self._upserts.get((table.name, *keys))
        if upsert is None:
            made = ArrayUpsert if self.dialect == "postgresql" else Upsert
            upsert = made(table, keys, self.engine.dialect)
            self._upserts[(table.name, *keys)] = upsert
        conn.exec_driver_sql(upsert.sql, upsert.parameters(rows))

    # ------------------------------------------------------------------ reads

    def _lookup(self, shape: str, scope: str, key: str, values: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of statement `shape` (`SHAPES`) for the rows of `scope` (a kind of record, or a
        namespace of run state) whose `key` is one of `values`, each value asked once (a value in two
        queries would find its rows twice), on one connection: `Store.chunk` values a query, 500 for
        rows with payloads (a bounded result on either backend)."""
        step = CHUNK_SQLITE if shape == "payloads" else self.chunk
        values = list(dict.fromkeys(values))
        with self.reading() as conn:
            for start in range(0, len(values), step):
                yield from self._lookup_chunk(conn, shape, scope, key, values[start : start + step])

    def _lookup_chunk(
        self, conn: Connection, shape: str, scope: str, key: str, values: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """One query of `_lookup` (at most `Store.chunk` values), run as the driver's statement
        (`_lookup_sql`) and read as the driver's tuples (`driver_rows`). On SQLite the values are
        padded with the last one to the statement's number of placeholders (a value twice finds its
        row once)."""
        params: Any
        if self.dialect == "postgresql":
            sql, params = self._lookup_sql(shape, key, 0), {"scope": scope, "values": list(values)}
        else:
            size = placeholders(len(values))
            sql, params = (
                self._lookup_sql(shape, key, size),
                (scope, *values, *[values[-1]] * (size - len(values))),
            )
        return driver_rows(conn.exec_driver_sql(sql, params))

    def _lookup_sql(self, shape: str, key: str, size: int) -> str:
        """The text of a `_lookup` statement, compiled by SQLAlchemy once per shape: `key = ANY(array)`
        on PostgreSQL (one text whatever the number of values, see `one_of`), `key IN (?, …)` with
        `size` placeholders on SQLite. Built per call (500 values coerced, the statement cached) and
        read as Row objects, the lookups of `grade` with nothing to do at 10k examples took 0.40 s to
        read 130,000 grade ids; compiled once and read as tuples, 0.18 s."""
        sql = self._lookups.get((shape, key, size))
        if sql is None:

            def one_of(column: sa.Column[Any]) -> sa.ColumnElement[bool]:
                if self.dialect == "postgresql":
                    return column == sa.any_(sa.bindparam("values", type_=TEXT_ARRAY))
                return column.in_([sa.bindparam(f"v{i}") for i in range(size)])

            compiled = SHAPES[shape](key, one_of).compile(dialect=self.engine.dialect)
            expected = None if self.dialect == "postgresql" else ["scope", *(f"v{i}" for i in range(size))]
            if compiled.positiontup != expected:  # _lookup passes (scope, *values) in this order
                raise AssertionError(f"unexpected parameter order {compiled.positiontup}")
            sql = self._lookups[(shape, key, size)] = str(compiled)
        return sql

    def one_of(self, column: sa.ColumnElement[Any], values: Sequence[str]) -> sa.ColumnElement[bool]:
        """`column IN (…)`; on PostgreSQL `column = ANY(array)`: one statement text whatever the number
        of values, so psycopg converts it once and the server plans it like the IN list (an index
        scan), instead of a text of 500 placeholders that is too long for psycopg's statement cache."""
        if self.dialect == "postgresql":
            return column == sa.any_(sa.bindparam("values", list(values), type_=TEXT_ARRAY))
        return column.in_(list(values))


class _WriteTransaction:
    """`with store.transaction() as conn:` — one write transaction (BEGIN IMMEDIATE on SQLite).

    A SQLite write lock held by another process past the timeout becomes a StoreLockedError.
    """

    def __init__(self, store: StoreBase) -> None:
        self.store = store
        self._context: Any = None

    def __enter__(self) -> Connection:
        self._context = self.store.engine.execution_options(livemed_write=True).begin()
        try:
            conn: Connection = self._context.__enter__()
        except sa.exc.OperationalError as exc:
            raise _locked_error(self.store, exc) from None
        return conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self._context.__exit__(exc_type, exc, tb)
        except sa.exc.OperationalError as error:
            raise _locked_error(self.store, error) from None
        if isinstance(exc, sa.exc.OperationalError):
            raise _locked_error(self.store, exc) from None


def _locked_error(store: StoreBase, exc: sa.exc.OperationalError) -> Exception:
    if "locked" in str(exc.orig) or "busy" in str(exc.orig):
        return StoreLockedError(
            f"store {store.location} is locked by another process; waited {store.lock_timeout:g} s "
            "(set LIVEMED_STORE_TIMEOUT to wait longer)"
        )
    return exc
