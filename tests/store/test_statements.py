"""How many statements the store sends: on PostgreSQL a batch is one statement (arrays, not a pipeline of
one statement per row), a claim of a free batch one INSERT and its release one DELETE; a SQLite store
never imports SQLAlchemy's PostgreSQL dialect."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from livemed.store import Store, StoredRow
from livemed.store.claims import Claims
from tests.foundation import test_claims
from tests.store.test_write_path import case


@contextmanager
def sent() -> Iterator[list[tuple[str, bool]]]:
    """Every statement any engine sends meanwhile: (its first words, whether it was an executemany)."""
    seen: list[tuple[str, bool]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((" ".join(statement.split()[:4]), many))

    sa.event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(Engine, "before_cursor_execute", record)


pg_store = test_claims.pg_store  # the fixture: a fresh PostgreSQL store (skipped without one)


def rows(n: int) -> list[StoredRow]:
    payload = case(0).model_dump_json()
    return [StoredRow("case", f"case:{i:05d}", f"doc:{i % 7}", None, payload) for i in range(n)]


def test_a_postgresql_batch_is_one_statement(pg_store: Store) -> None:
    with sent() as seen:
        assert pg_store.put_rows(rows(1000)) == 1000
    inserts = [s for s in seen if s[0].startswith("INSERT INTO records")]
    assert inserts == [("INSERT INTO records (kind,", False)]  # one statement, not an executemany
    from psycopg.adapt import PyFormat
    from psycopg.types.array import ListBinaryDumper

    with pg_store.engine.connect() as conn:  # lists go in PostgreSQL's binary array format
        adapters = conn.connection.dbapi_connection.adapters  # type: ignore[union-attr]
        assert adapters.get_dumper(list, PyFormat.AUTO) is ListBinaryDumper
    ids = [f"case:{i:05d}" for i in range(0, 2400, 2)]  # 1,200 ids, half of them stored
    with sent() as seen:
        found = pg_store.has("case", ids)
    assert found == {f"case:{i:05d}" for i in range(0, 1000, 2)}
    assert [s for s in seen if s[0].startswith("SELECT")] == [("SELECT records.id FROM records", False)]
    entries = [(f"k{i % 300}", "m", {"n": i}) for i in range(600)]  # each key twice: the last wins
    with sent() as seen:
        pg_store.cache_put_many(entries)
    assert [s for s in seen if s[0].startswith("INSERT")] == [("INSERT INTO response_cache (key,", False)]
    assert pg_store.cache_get("k7") == {"n": 307}
    assert pg_store.cache_count() == 300


def test_a_free_batch_is_claimed_by_one_insert_and_given_back_by_one_delete(pg_store: Store) -> None:
    mine, theirs = Claims(pg_store, "grade"), Claims(pg_store, "grade")
    assert theirs.take(["a", "b"]) == {"a", "b"}
    items = [f"item-{i}" for i in range(512)]
    with sent() as seen:
        assert mine.take(items) == set(items)
    writes = [s for s in seen if not s[0].startswith(("BEGIN", "COMMIT", "ROLLBACK", "select pg_"))]
    assert writes == [("INSERT INTO run_state (namespace,", False)]  # no look: every item was free
    with sent() as seen:
        assert mine.take(["a", "item-0", "c"]) == {"item-0", "c"}  # held by a live worker: left to it
    assert sum(1 for s in seen if s[0].startswith("INSERT")) == 1
    with sent() as seen:
        mine.release([*items, "c", "a"])  # "a" is not ours: left as it is
    assert [s for s in seen if s[0].startswith("DELETE")] == [("DELETE FROM run_state WHERE", False)]
    held = pg_store.state_items("claim")
    assert set(held) == {"grade|a", "grade|b"}
    assert all(value["holder"] == theirs.holder for value in held.values())


def test_lookups_of_more_ids_than_one_statement_takes(any_store: Store) -> None:
    any_store.put_rows(rows(300))
    ids = [f"case:{i:05d}" for i in range(12_000)]  # several chunks on either backend
    assert any_store.has("case", ids) == {f"case:{i:05d}" for i in range(300)}
    assert sorted(any_store.ids_by_parents("case", ["doc:3", "doc:9", *ids])) == [
        f"case:{i:05d}" for i in range(3, 300, 7)
    ]
    assert any_store.delete("case", ids[::2]) == 150
    assert any_store.count()["case"] == 150


def test_a_sqlite_store_never_imports_the_postgresql_dialect(tmp_path: Any) -> None:
    script = f"""
import sys
from livemed.store import Store
from livemed.store.claims import Claims
import livemed.store.leases
store = Store({str(tmp_path / "s.db")!r})
store.put_rows([])
assert store.has("case", ["x"]) == set()
assert Claims(store, "grade").take(["x"]) == {{"x"}}
store.cache_put_many([("k", "m", {{}})])
store.close()
loaded = sorted(m for m in sys.modules if "postgres" in m or m.startswith("psycopg"))
assert loaded == [], loaded
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_kind_absent_from_a_large_table_is_looked_up_in_an_index_by_a_generic_plan(pg_store: Store) -> None:
    """psycopg prepares a statement run often and PostgreSQL may then plan it for any kind: a bare
    `LIMIT 1` is planned as a table scan that stops at the first row, which reads the whole table for
    an absent kind (every `grade` batch asks whether there are failures)."""
    pg_store.put_rows(rows(3000))
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        statements.append(statement)

    sa.event.listen(Engine, "before_cursor_execute", record)
    try:
        assert pg_store.any_of("grade_failure") is False
    finally:
        sa.event.remove(Engine, "before_cursor_execute", record)
    names = re.findall(r"%\((\w+)\)s", statements[-1])
    generic = statements[-1]
    for number, name in enumerate(names, 1):
        generic = generic.replace(f"%({name})s", f"${number}")
    with pg_store.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE records")
        conn.exec_driver_sql(f"PREPARE any_of AS {generic}")
        conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        values = ", ".join("'grade_failure'" if "kind" in name else "1" for name in names)
        plan = "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN EXECUTE any_of({values})"))
    assert "Seq Scan" not in plan, plan
    assert "records_pkey" in plan, plan
