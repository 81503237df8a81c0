"""The store: every record between stages, the response cache and small pieces of run state.

SQLAlchemy 2 Core over a SQLite file by default, or PostgreSQL by URL (`postgresql+psycopg://…`).
Records are upserted by `(kind, id)`, so a re-run never duplicates; each `put` batch is one
transaction; reads stream in keyset-paginated batches, so a run over 100k records stays small.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from livemed import __version__
from livemed.errors import StoreLockedError, StoreOpenError, StoreRecordError, StoreVersionError
from livemed.records import Record, utcnow
from livemed.records.rows import StoredRow, naive_utc, stored_row
from livemed.store.connect import (
    DEFAULT_LOCK_TIMEOUT,
    display_url,
    env_lock_timeout,
    make_engine,
    resolve_url,
)
from livemed.store.schema import (
    cache_table,
    meta_table,
    metadata,
    records_table,
    signatures_table,
    state_table,
)

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

SCHEMA_VERSION = 3
CHUNK_SQLITE, CHUNK_POSTGRESQL = 500, 5000  # ids per `IN (…)` / `= ANY(array)` lookup (`Store.chunk`)

R = TypeVar("R", bound=Record)
V = TypeVar("V")

_ID_PAYLOAD = ("id", "payload")
_TEXT_ARRAY = sa.ARRAY(sa.Text)  # the generic type: no import of the PostgreSQL dialect on SQLite

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


class Store:
    """Typed persistence for livemed records."""

    def __init__(self, location: str | Path, *, lock_timeout: float | None = None) -> None:
        self.url = resolve_url(location)
        self.lock_timeout = lock_timeout if lock_timeout is not None else env_lock_timeout()
        self.engine = make_engine(self.url, self.lock_timeout)
        self.dialect = self.engine.dialect.name
        # ids per lookup statement: SQLite binds each as a placeholder of an IN list; PostgreSQL takes
        # one array parameter, so a batch of a stage (512 grades) is one statement, not two
        self.chunk = CHUNK_POSTGRESQL if self.dialect == "postgresql" else CHUNK_SQLITE
        self._upserts: dict[tuple[str, ...], _Upsert | _ArrayUpsert] = {}
        self._lookups: dict[tuple[str, str, int], str] = {}
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
                _refresh_statistics(conn)
        except sa.exc.OperationalError:
            pass

    def __enter__(self) -> Store:
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
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:
            if self._stored_version(conn) == SCHEMA_VERSION:
                return
        with self._write() as conn:
            if self.dialect == "postgresql":  # workers opening a fresh database at once: one creates it
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
            stored = self._stored_version(conn)
            metadata.create_all(conn)
            version = SCHEMA_VERSION if stored is None else stored
            if version > SCHEMA_VERSION:
                raise StoreVersionError(
                    f"store {self.location} has schema version {version}, newer than this livemed "
                    f"understands ({SCHEMA_VERSION}); upgrade livemed"
                )
            while version < SCHEMA_VERSION:
                MIGRATIONS[version](conn)
                version += 1
            self._upsert(conn, meta_table, [{"key": "schema_version", "value": str(version)}], ["key"])
            if stored is not None and self.dialect == "sqlite":  # statistics for the new indexes
                _refresh_statistics(conn, force=True)
            elif stored is not None:
                conn.execute(sa.text("ANALYZE records"))

    # ------------------------------------------------------------------ records

    def put(self, records: Iterable[Record], *, batch_size: int = 1024) -> int:
        """Upsert records by (kind, id), one transaction per batch; returns how many were written."""
        return self.put_rows((stored_row(record) for record in records), batch_size=batch_size)

    def put_rows(self, rows: Iterable[StoredRow], *, batch_size: int = 1024) -> int:
        """`put` of records already made into rows (`stored_row`, e.g. in another process): upserted by
        (kind, id), the last of a repeated id wins, one transaction per batch; returns how many."""
        written = 0
        batch: list[StoredRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= batch_size:
                written += self._put_rows(batch)
                batch = []
        if batch:
            written += self._put_rows(batch)
        return written

    def _put_rows(self, rows: list[StoredRow]) -> int:
        unique = list({(r.kind, r.id): r for r in rows}.values())
        now = naive_utc(utcnow())  # one write time for the transaction's rows
        values = [
            (kind, id_, parent, published, now, payload) for kind, id_, parent, published, payload in unique
        ]
        with self._write() as conn:
            self._upsert_values(conn, records_table, values, _KEYS)
        return len(unique)

    def get(self, cls: type[R], record_id: str) -> R | None:
        with self.engine.connect() as conn:
            payload = conn.execute(
                sa.select(records_table.c.payload).where(
                    records_table.c.kind == cls.kind, records_table.c.id == record_id
                )
            ).scalar_one_or_none()
        return None if payload is None else _load(cls, record_id, payload)

    def get_many(self, cls: type[R], ids: Sequence[str]) -> dict[str, R]:
        """The stored records of `ids` by id (missing ones left out; one query per 500 ids)."""
        return {
            one: _load(cls, one, payload) for one, payload in self._lookup("payloads", cls.kind, "id", ids)
        }

    def has(self, kind: str, ids: Sequence[str]) -> set[str]:
        """The subset of `ids` that are stored under `kind` (one query per `Store.chunk` ids)."""
        return {row[0] for row in self._lookup("ids", kind, "id", ids)}

    def ids(self, kind: str, *, batch_size: int = 5000) -> Iterator[str]:
        for rows in self._pages(kind, ("id",), batch_size=batch_size):
            yield from (row[0] for row in rows)

    def id_parents(self, kind: str, *, batch_size: int = 5000) -> Iterator[tuple[str, str | None]]:
        """(id, parent id) of every record of `kind` in id order, in keyset pages, without reading a
        payload: what records exist and what each belongs to (`grade`'s answers and their cases)."""
        for rows in self._pages(kind, ("id", "parent_id"), batch_size=batch_size):
            yield from rows

    def iter(
        self,
        cls: type[R],
        *,
        parent_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        batch_size: int = 1000,
    ) -> Iterator[R]:
        """Stream records of one type in id order, optionally filtered by parent or publication date."""
        filters: list[sa.ColumnElement[bool]] = []
        if parent_id is not None:
            filters.append(records_table.c.parent_id == parent_id)
        if since is not None:
            filters.append(records_table.c.published_at > naive_utc(since))
        if until is not None:
            filters.append(records_table.c.published_at <= naive_utc(until))
        for rows in self._pages(cls.kind, _ID_PAYLOAD, filters, batch_size=batch_size):
            yield from (_load(cls, one, payload) for one, payload in rows)

    def by_parents(self, cls: type[R], parent_ids: Sequence[str]) -> Iterator[R]:
        """Records of one type whose parent is one of `parent_ids` (one query per 500 parents)."""
        for one, payload in self._lookup("payloads", cls.kind, "parent_id", parent_ids):
            yield _load(cls, one, payload)

    def any_of(self, kind: str) -> bool:
        """Whether any record of `kind` is stored (one indexed lookup)."""
        query = sa.select(records_table.c.id).where(records_table.c.kind == kind).limit(1)
        with self.engine.connect() as conn:
            return conn.execute(query).first() is not None

    def ids_by_parents(self, kind: str, parent_ids: Sequence[str]) -> list[str]:
        """The ids of the records of `kind` whose parent is one of `parent_ids` (from the index alone)."""
        return [row[0] for row in self._lookup("ids", kind, "parent_id", parent_ids)]

    def fields_by_parents(
        self, kind: str, parent_ids: Sequence[str], view: TypeAdapter[V]
    ) -> Iterator[tuple[str, V]]:
        """(id, view) of the records of `kind` whose parent is one of `parent_ids`, each payload read
        through `view` (a TypeAdapter of a TypedDict naming only the fields a caller needs: several
        times cheaper than the whole record). One query per 500 parents."""
        for one, payload in self._lookup("payloads", kind, "parent_id", parent_ids):
            yield one, _load_view(kind, view, one, payload)

    def fields(self, kind: str, view: TypeAdapter[V], *, batch_size: int = 1000) -> Iterator[tuple[str, V]]:
        """(id, view) of every record of `kind` in id order, read through `view` (see
        `fields_by_parents`), in keyset pages."""
        for rows in self._pages(kind, _ID_PAYLOAD, batch_size=batch_size):
            yield from ((one, _load_view(kind, view, one, payload)) for one, payload in rows)

    def fields_many(self, kind: str, ids: Sequence[str], view: TypeAdapter[V]) -> Iterator[tuple[str, V]]:
        """(id, view) of the stored records of `kind` among `ids`, read through `view` (see
        `fields_by_parents`); missing ids left out, one query per 500 ids."""
        for one, payload in self._lookup("payloads", kind, "id", ids):
            yield one, _load_view(kind, view, one, payload)

    def _lookup(self, shape: str, scope: str, key: str, values: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of statement `shape` (`_SHAPES`) for the rows of `scope` (a kind of record, or a
        namespace of run state) whose `key` is one of `values`, each value asked once (a value in two
        queries would find its rows twice), on one connection: `Store.chunk` values a query, 500 for
        rows with payloads (a bounded result on either backend)."""
        step = CHUNK_SQLITE if shape == "payloads" else self.chunk
        values = list(dict.fromkeys(values))
        with self.engine.connect() as conn:
            for start in range(0, len(values), step):
                yield from self._lookup_chunk(conn, shape, scope, key, values[start : start + step])

    def _lookup_chunk(
        self, conn: Connection, shape: str, scope: str, key: str, values: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """One query of `_lookup` (at most `Store.chunk` values), run as the driver's statement
        (`_lookup_sql`) and read as the driver's tuples (`_driver_rows`). On SQLite the values are
        padded with the last one to the statement's number of placeholders (a value twice finds its
        row once)."""
        params: Any
        if self.dialect == "postgresql":
            sql, params = self._lookup_sql(shape, key, 0), {"scope": scope, "values": list(values)}
        else:
            size = _placeholders(len(values))
            sql, params = (
                self._lookup_sql(shape, key, size),
                (scope, *values, *[values[-1]] * (size - len(values))),
            )
        return _driver_rows(conn.exec_driver_sql(sql, params))

    def _lookup_sql(self, shape: str, key: str, size: int) -> str:
        """The text of a `_lookup` statement, compiled by SQLAlchemy once per shape: `key = ANY(array)`
        on PostgreSQL (one text whatever the number of values, see `_one_of`), `key IN (?, …)` with
        `size` placeholders on SQLite. Built per call (500 values coerced, the statement cached) and
        read as Row objects, the lookups of `grade` with nothing to do at 10k examples took 0.40 s to
        read 130,000 grade ids; compiled once and read as tuples, 0.18 s."""
        sql = self._lookups.get((shape, key, size))
        if sql is None:

            def one_of(column: sa.Column[Any]) -> sa.ColumnElement[bool]:
                if self.dialect == "postgresql":
                    return column == sa.any_(sa.bindparam("values", type_=_TEXT_ARRAY))
                return column.in_([sa.bindparam(f"v{i}") for i in range(size)])

            compiled = _SHAPES[shape](key, one_of).compile(dialect=self.engine.dialect)
            expected = None if self.dialect == "postgresql" else ["scope", *(f"v{i}" for i in range(size))]
            if compiled.positiontup != expected:  # _lookup passes (scope, *values) in this order
                raise AssertionError(f"unexpected parameter order {compiled.positiontup}")
            sql = self._lookups[(shape, key, size)] = str(compiled)
        return sql

    def _one_of(self, column: sa.ColumnElement[Any], values: Sequence[str]) -> sa.ColumnElement[bool]:
        """`column IN (…)`; on PostgreSQL `column = ANY(array)`: one statement text whatever the number
        of values, so psycopg converts it once and the server plans it like the IN list (an index
        scan), instead of a text of 500 placeholders that is too long for psycopg's statement cache."""
        if self.dialect == "postgresql":
            return column == sa.any_(sa.bindparam("values", list(values), type_=_TEXT_ARRAY))
        return column.in_(list(values))

    def updated_at(self, kind: str, ids: Sequence[str], *, by_parent: bool = False) -> dict[str, datetime]:
        """When each of `ids` was last written (naive UTC): the records of `kind` with those ids, or,
        `by_parent`, the latest write among the records whose parent each id is. Ids with nothing
        stored are left out; one query per `Store.chunk` ids, answered from an index."""
        key, shape = ("parent_id", "latest") if by_parent else ("id", "written")
        dialect = self.engine.dialect
        parse = records_table.c.updated_at.type.dialect_impl(dialect).result_processor(dialect, None)
        found: dict[str, datetime] = {}
        for k, t in self._lookup(shape, kind, key, ids):
            if t is not None:  # SQLite's text of a time: parsed as SQLAlchemy would
                found[k] = t if parse is None else cast(datetime, parse(t))
        return found

    def _pages(
        self,
        kind: str,
        columns: tuple[str, ...],
        filters: Sequence[sa.ColumnElement[bool]] = (),
        *,
        batch_size: int,
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The rows (`columns`, text columns starting with `id`) of `kind` in id order, `batch_size`
        at a time (keyset pages), as the driver's tuples (see `_driver_rows`)."""
        last: str | None = None
        selected = [records_table.c[name] for name in _text_columns(columns)]
        while True:
            query = sa.select(*selected).where(records_table.c.kind == kind, *filters)
            if last is not None:
                query = query.where(records_table.c.id > last)
            query = query.order_by(records_table.c.id).limit(batch_size)
            with self.engine.connect() as conn:
                rows = _driver_rows(conn.execute(query))
            if not rows:
                return
            yield rows
            last = rows[-1][0]

    def count(self) -> dict[str, int]:
        """Record counts by kind."""
        query = sa.select(records_table.c.kind, sa.func.count()).group_by(records_table.c.kind)
        with self.engine.connect() as conn:
            return {kind: int(n) for kind, n in conn.execute(query).all()}

    def delete(self, kind: str, ids: Sequence[str]) -> int:
        deleted = 0
        with self._write() as conn:
            for start in range(0, len(ids), self.chunk):
                chunk = list(ids[start : start + self.chunk])
                result = conn.execute(
                    sa.delete(records_table).where(
                        records_table.c.kind == kind, self._one_of(records_table.c.id, chunk)
                    )
                )
                deleted += result.rowcount or 0
        return deleted

    # ------------------------------------------------------------------ response cache

    def cache_get(self, key: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            payload = conn.execute(
                sa.select(cache_table.c.payload).where(cache_table.c.key == key)
            ).scalar_one_or_none()
        return None if payload is None else dict(json.loads(payload))

    def cache_put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        row = {"key": key, "model": model, "created_at": naive_utc(utcnow()), "payload": json.dumps(payload)}
        with self._write() as conn:
            self._upsert(conn, cache_table, [row], ["key"])

    def cache_get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Cached payloads for those of `keys` that are in the cache (one query per `Store.chunk` keys)."""
        return {key: dict(json.loads(text)) for key, text in self.cache_get_many_json(keys).items()}

    def cache_get_many_json(self, keys: Sequence[str]) -> dict[str, str]:
        """Like `cache_get_many`, with each payload as its stored JSON text (for fast validation)."""
        found: dict[str, str] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(keys), self.chunk):
                chunk = list(keys[start : start + self.chunk])
                query = sa.select(cache_table.c.key, cache_table.c.payload).where(
                    self._one_of(cache_table.c.key, chunk)
                )
                found.update((key, payload) for key, payload in conn.execute(query).all())
        return found

    def cache_put_many(self, entries: Sequence[tuple[str, str, dict[str, Any] | str]]) -> int:
        """Write `(key, model, payload)` entries in one transaction (a payload given as a str is its JSON
        text already); returns how many."""
        now = naive_utc(utcnow())
        rows = [
            {
                "key": key,
                "model": model,
                "created_at": now,
                "payload": payload if isinstance(payload, str) else json.dumps(payload),
            }
            for key, model, payload in entries
        ]
        with self._write() as conn:
            self._upsert(conn, cache_table, rows, ["key"])
        return len(rows)

    def cache_count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(cache_table)).scalar_one())

    # ------------------------------------------------------------------ small run state (watermarks, …)

    def state_get(self, namespace: str, key: str) -> Any:
        with self.engine.connect() as conn:
            value = conn.execute(
                sa.select(state_table.c.value).where(
                    state_table.c.namespace == namespace, state_table.c.key == key
                )
            ).scalar_one_or_none()
        return None if value is None else json.loads(value)

    def state_set(self, namespace: str, key: str, value: Any) -> None:
        row = {
            "namespace": namespace,
            "key": key,
            "updated_at": naive_utc(utcnow()),
            "value": json.dumps(value),
        }
        with self._write() as conn:
            self._upsert(conn, state_table, [row], ["namespace", "key"])

    def state_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]:
        """The values of those of `keys` that `namespace` holds (one query per `Store.chunk` keys)."""
        return {key: json.loads(value) for key, value in self._lookup("state", namespace, "key", keys)}

    def state_set_many(self, namespace: str, values: dict[str, Any]) -> None:
        """`state_set` of several keys in one transaction."""
        now = naive_utc(utcnow())
        rows = [
            {"namespace": namespace, "key": key, "updated_at": now, "value": json.dumps(value)}
            for key, value in values.items()
        ]
        with self._write() as conn:
            self._upsert(conn, state_table, rows, ["namespace", "key"])

    def state_items(self, namespace: str) -> dict[str, Any]:
        query = sa.select(state_table.c.key, state_table.c.value).where(state_table.c.namespace == namespace)
        with self.engine.connect() as conn:
            return {key: json.loads(value) for key, value in conn.execute(query).all()}

    # ------------------------------------------------------------------ duplicate-detection signatures

    def signatures_put(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Upsert (doc id, exact-text hash, MinHash signature bytes) rows in one transaction."""
        payload = [{"doc_id": d, "exact": e, "minhash": m} for d, e, m in rows]
        with self._write() as conn:
            self._upsert(conn, signatures_table, payload, ["doc_id"])

    def signatures_clear(self) -> None:
        """Delete every stored signature (before re-signing with new MinHash parameters)."""
        with self._write() as conn:
            conn.execute(signatures_table.delete())

    def signatures_iter(self, *, batch_size: int = 5000) -> Iterator[tuple[str, str, bytes]]:
        """Every stored signature, streamed in doc-id order."""
        last = ""
        columns = (signatures_table.c.doc_id, signatures_table.c.exact, signatures_table.c.minhash)
        while True:
            query = sa.select(*columns).where(signatures_table.c.doc_id > last)
            with self.engine.connect() as conn:
                rows = conn.execute(query.order_by(signatures_table.c.doc_id).limit(batch_size)).all()
            if not rows:
                return
            yield from ((r.doc_id, r.exact, bytes(r.minhash)) for r in rows)
            last = rows[-1].doc_id

    # ------------------------------------------------------------------ helpers

    def _write(self) -> _WriteTransaction:
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
            made = _ArrayUpsert if self.dialect == "postgresql" else _Upsert
            upsert = made(table, keys, self.engine.dialect)
            self._upserts[(table.name, *keys)] = upsert
        conn.exec_driver_sql(upsert.sql, upsert.parameters(rows))


_KIND = records_table.c.kind == sa.bindparam("scope")
Shape = Callable[[str, Callable[[sa.Column[Any]], sa.ColumnElement[bool]]], sa.Select[Any]]
# The statements of the batched lookups (`Store._lookup`), given the name of the key column and the
# match of a column against the values: records by id or parent, their ids; their ids and payloads;
# each one's write time, and the latest write per key (`Store.updated_at` by id and by parent); the
# values of run state's keys in a namespace (`Store.state_many`).
_SHAPES: dict[str, Shape] = {
    "ids": lambda key, one_of: sa.select(records_table.c.id).where(_KIND, one_of(records_table.c[key])),
    "payloads": lambda key, one_of: sa.select(records_table.c.id, records_table.c.payload).where(
        _KIND, one_of(records_table.c[key])
    ),
    "written": lambda key, one_of: sa.select(records_table.c.id, records_table.c.updated_at).where(
        _KIND, one_of(records_table.c[key])
    ),
    "latest": lambda key, one_of: (
        sa.select(records_table.c[key], sa.func.max(records_table.c.updated_at))
        .where(_KIND, one_of(records_table.c[key]))
        .group_by(records_table.c[key])
    ),
    "state": lambda key, one_of: sa.select(state_table.c.key, state_table.c.value).where(
        state_table.c.namespace == sa.bindparam("scope"), one_of(state_table.c[key])
    ),
}


def _driver_rows(result: sa.CursorResult[Any]) -> list[tuple[Any, ...]]:
    """All the rows of `result` as the driver returns them, plain tuples: no Row object per row
    (half the client's time of fetching 130,000 ids), and no result processing: SQLAlchemy hands text
    over as the driver returns it on both backends (`_text_columns`); a caller reading another type
    applies the column type's result processor itself (`Store.updated_at`)."""
    rows = list(result.cursor.fetchall())
    result.close()
    return rows


def _text_columns(columns: tuple[str, ...]) -> tuple[str, ...]:
    """`columns` of `records`, each checked to be text (read by `_driver_rows`, unprocessed)."""
    for name in columns:
        if not isinstance(records_table.c[name].type, sa.Text):
            raise TypeError(f"records.{name} is not a text column: its values need SQLAlchemy's processing")
    return columns


def _placeholders(n: int) -> int:
    """The placeholders of SQLite's lookup statement for `n` (1 ≤ n ≤ `CHUNK_SQLITE`) values: the next
    power of two, or `CHUNK_SQLITE`; ten statements serve every size."""
    return min(1 << (n - 1).bit_length(), CHUNK_SQLITE)


ANALYZE_FROM = 10_000  # records: below this a SQLite store needs no statistics


def _refresh_statistics(conn: Connection, *, force: bool = False) -> None:
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


class _WriteTransaction:
    """`with store._write() as conn:` — one write transaction (BEGIN IMMEDIATE on SQLite).

    A SQLite write lock held by another process past the timeout becomes a StoreLockedError.
    """

    def __init__(self, store: Store) -> None:
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


def _locked_error(store: Store, exc: sa.exc.OperationalError) -> Exception:
    if "locked" in str(exc.orig) or "busy" in str(exc.orig):
        return StoreLockedError(
            f"store {store.location} is locked by another process; waited {store.lock_timeout:g} s "
            "(set LIVEMED_STORE_TIMEOUT to wait longer)"
        )
    return exc


_KEYS = ["kind", "id"]


def _row(record: Record) -> dict[str, Any]:
    """A record's row with its write time, as a dict of columns."""
    return {**stored_row(record)._asdict(), "updated_at": naive_utc(utcnow())}


class _Upsert:
    """SQLite's `INSERT … ON CONFLICT (keys) DO UPDATE` of a table, compiled once, and its rows (value
    tuples in the table's column order) as the DBAPI's `executemany` takes them (qmark sequences),
    each value through its column type's bind processor (SQLite's datetime text), made once per
    distinct value of a call (a batch's rows share their two times). PostgreSQL: `_ArrayUpsert`."""

    def __init__(self, table: sa.Table, keys: list[str], dialect: sa.Dialect) -> None:
        insert = sqlite.insert(table)
        updates = {c.name: insert.excluded[c.name] for c in table.columns if c.name not in keys}
        compiled = insert.on_conflict_do_update(index_elements=keys, set_=updates).compile(dialect=dialect)
        self.sql = compiled.string
        self.columns = [c.name for c in table.columns]
        order = list(compiled.positiontup or [])
        self.order = [self.columns.index(name) for name in order] if order != self.columns else None
        self.binds = [
            (index, bind)
            for index, column in enumerate(table.columns)
            if (bind := column.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        ]

    def parameters(self, rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
        if self.binds:
            rows = self._bound(rows)
        if self.order is not None:
            order = self.order
            rows = [tuple(row[index] for index in order) for row in rows]
        return rows

    def _bound(self, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        made: dict[tuple[int, Any], Any] = {}
        out = []
        for row in rows:
            values = list(row)
            for index, bind in self.binds:
                key = (index, values[index])
                value = made.get(key, made)
                if value is made:
                    value = made[key] = bind(values[index])
                values[index] = value
            out.append(tuple(values))
        return out


class _ArrayUpsert:
    """PostgreSQL's upsert of a whole batch as one statement: `INSERT … SELECT FROM unnest(one array
    per column) ON CONFLICT (keys) DO UPDATE`. psycopg sends a DBAPI `executemany` as a pipeline of one
    statement per row (each converted and dispatched on its own); one statement of a few arrays is one
    round trip and one plan however many rows. ON CONFLICT cannot change a row twice in one statement,
    so of a repeated key the last row is kept (what the row-by-row upsert left)."""

    def __init__(self, table: sa.Table, keys: list[str], dialect: sa.Dialect) -> None:
        preparer = dialect.identifier_preparer
        names = [preparer.quote(c.name) for c in table.columns]
        arrays = ", ".join(
            f"%(c{index})b::{column.type.compile(dialect=dialect)}[]"
            for index, column in enumerate(table.columns)
        )
        updates = ", ".join(
            f"{name} = excluded.{name}"
            for column, name in zip(table.columns, names, strict=True)
            if column.name not in keys
        )
        conflict = ", ".join(preparer.quote(key) for key in keys)
        action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
        self.sql = (
            f"INSERT INTO {preparer.format_table(table)} ({', '.join(names)}) "
            f"SELECT * FROM unnest({arrays}) ON CONFLICT ({conflict}) {action}"
        )
        self.columns = len(table.columns)
        self.keys = [[c.name for c in table.columns].index(key) for key in keys]

    def parameters(self, rows: Sequence[Sequence[Any]]) -> dict[str, list[Any]]:
        keys = self.keys
        unique = list({tuple(row[index] for index in keys): row for row in rows}.values())
        return {f"c{index}": [row[index] for row in unique] for index in range(self.columns)}


def _load(cls: type[R], record_id: str, payload: str) -> R:
    """A stored record; one that no longer validates (written by another livemed) is a one-line error."""
    try:
        return cls.model_validate_json(payload)
    except ValidationError as exc:
        raise _invalid(cls.kind, record_id, exc) from None


def _load_view(kind: str, view: TypeAdapter[V], record_id: str, payload: str) -> V:
    try:
        return view.validate_json(payload)
    except ValidationError as exc:
        raise _invalid(kind, record_id, exc) from None


def _invalid(kind: str, record_id: str, exc: ValidationError) -> StoreRecordError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(record)"
    return StoreRecordError(
        f"stored {kind} {record_id[:120]!r} does not validate with livemed {__version__}: "
        f"{where}: {first['msg']}"
    )
