"""The statements the store sends, each compiled once: the upsert of a batch (SQLite's `executemany`,
PostgreSQL's arrays) and the batched lookups by id or parent, read as the driver's tuples."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from livemed.store.schema import records_table, state_table

CHUNK_SQLITE, CHUNK_POSTGRESQL = 500, 5000  # ids per `IN (…)` / `= ANY(array)` lookup (`Store.chunk`)
TEXT_ARRAY = sa.ARRAY(sa.Text)  # the generic type: no import of the PostgreSQL dialect on SQLite

_KIND = records_table.c.kind == sa.bindparam("scope")
Shape = Callable[[str, Callable[[sa.Column[Any]], sa.ColumnElement[bool]]], sa.Select[Any]]
# The statements of the batched lookups (`Store._lookup`), given the name of the key column and the
# match of a column against the values: records by id or parent, their ids; their ids and payloads;
# each one's write time, and the latest write per key (`Store.updated_at` by id and by parent); the
# values of run state's keys in a namespace (`Store.state_many`).
SHAPES: dict[str, Shape] = {
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


def driver_rows(result: sa.CursorResult[Any]) -> list[tuple[Any, ...]]:
    """All the rows of `result` as the driver returns them, plain tuples: no Row object per row
    (half the client's time of fetching 130,000 ids), and no result processing: SQLAlchemy hands text
    over as the driver returns it on both backends (`text_columns`); a caller reading another type
    applies the column type's result processor itself (`Store.updated_at`)."""
    rows = list(result.cursor.fetchall())
    result.close()
    return rows


def text_columns(columns: tuple[str, ...]) -> tuple[str, ...]:
    """`columns` of `records`, each checked to be text (read by `driver_rows`, unprocessed)."""
    for name in columns:
        if not isinstance(records_table.c[name].type, sa.Text):
            raise TypeError(f"records.{name} is not a text column: its values need SQLAlchemy's processing")
    return columns


def placeholders(n: int) -> int:
    """The placeholders of SQLite's lookup statement for `n` (1 ≤ n ≤ `CHUNK_SQLITE`) values: the next
    power of two, or `CHUNK_SQLITE`; ten statements serve every size."""
    return min(1 << (n - 1).bit_length(), CHUNK_SQLITE)


class Upsert:
    """SQLite's `INSERT … ON CONFLICT (keys) DO UPDATE` of a table, compiled once, and its rows (value
    tuples in the table's column order) as the DBAPI's `executemany` takes them (qmark sequences),
    each value through its column type's bind processor (SQLite's datetime text), made once per
    distinct value of a call (a batch's rows share their two times). PostgreSQL: `ArrayUpsert`."""

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


class ArrayUpsert:
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
