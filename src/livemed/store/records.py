"""The record table: every record between stages, upserted by `(kind, id)` so a re-run never
duplicates, each `put` batch one transaction; reads stream in keyset-paginated batches, so a run over
100k records stays small, and lookups by id or parent are batched (`Store.chunk` a query)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from pydantic import TypeAdapter, ValidationError

from livemed import __version__
from livemed.errors import StoreRecordError
from livemed.records import Record, utcnow
from livemed.records.rows import StoredRow, naive_utc, stored_row
from livemed.store.base import StoreBase
from livemed.store.schema import records_table
from livemed.store.statements import driver_rows, text_columns

R = TypeVar("R", bound=Record)
V = TypeVar("V")

_ID_PAYLOAD = ("id", "payload")
_KEYS = ["kind", "id"]


class RecordTable(StoreBase):
    """The records of every stage: puts, reads by kind, id or parent, and their write times."""

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
        with self.transaction() as conn:
            self._upsert_values(conn, records_table, values, _KEYS)
        return len(unique)

    def put_new(self, record: Record) -> bool:
        """Insert `record` only if no record of its kind has its id (`ON CONFLICT DO NOTHING`); whether
        it was inserted. Two writers making the same next id: exactly one wins, the other reads again."""
        kind, id_, parent, published, payload = stored_row(record)
        row = {
            "kind": kind,
            "id": id_,
            "parent_id": parent,
            "published_at": published,
            "updated_at": naive_utc(utcnow()),
            "payload": payload,
        }
        with self.transaction() as conn:
            result = conn.execute(self._insert_new(), [row])
        return bool(result.rowcount)

    def _insert_new(self) -> sa.Insert:
        """`INSERT … ON CONFLICT DO NOTHING` into the records (each dialect imported only where used)."""
        if self.dialect == "sqlite":
            from sqlalchemy.dialects import sqlite

            return sqlite.insert(records_table).on_conflict_do_nothing()
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(records_table).on_conflict_do_nothing()

    def get(self, cls: type[R], record_id: str) -> R | None:
        with self.reading() as conn:
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
        """Whether any record of `kind` is stored (one indexed lookup). Ordered by id, so PostgreSQL's
        generic plan reads the primary key: with a bare LIMIT it scans the table for an absent kind."""
        query = sa.select(records_table.c.id).where(records_table.c.kind == kind)
        query = query.order_by(records_table.c.id).limit(1)
        with self.reading() as conn:
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
        at a time (keyset pages), as the driver's tuples (see `driver_rows`)."""
        last: str | None = None
        selected = [records_table.c[name] for name in text_columns(columns)]
        while True:
            query = sa.select(*selected).where(records_table.c.kind == kind, *filters)
            if last is not None:
                query = query.where(records_table.c.id > last)
            query = query.order_by(records_table.c.id).limit(batch_size)
            with self.reading() as conn:
                rows = driver_rows(conn.execute(query))
            if not rows:
                return
            yield rows
            last = rows[-1][0]

    def count(self) -> dict[str, int]:
        """Record counts by kind."""
        query = sa.select(records_table.c.kind, sa.func.count()).group_by(records_table.c.kind)
        with self.reading() as conn:
            return {kind: int(n) for kind, n in conn.execute(query).all()}

    def stamp(self, kinds: Sequence[str]) -> tuple[tuple[str, int, Any], ...]:
        """(kind, records, latest write) of each of `kinds`: it changes when a record of them is
        written or deleted (a write time is the transaction's), so a reader can keep what it made of
        them until it does; one query a kind, answered from an index and the rows' write times."""
        column = records_table.c.updated_at
        stamps = []
        with self.reading() as conn:
            for kind in kinds:
                query = sa.select(sa.func.count(), sa.func.max(column)).where(records_table.c.kind == kind)
                n, latest = conn.execute(query).one()
                stamps.append((kind, int(n), latest))
        return tuple(stamps)

    def delete(self, kind: str, ids: Sequence[str]) -> int:
        deleted = 0
        with self.transaction() as conn:
            for start in range(0, len(ids), self.chunk):
                chunk = list(ids[start : start + self.chunk])
                result = conn.execute(
                    sa.delete(records_table).where(
                        records_table.c.kind == kind, self.one_of(records_table.c.id, chunk)
                    )
                )
                deleted += result.rowcount or 0
        return deleted


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
