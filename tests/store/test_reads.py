"""Reads: `Store.reading()` (autocommit on PostgreSQL) and `Store.holding_reads()` (one connection for a
loop of lookups, this thread's alone)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from livemed.store import Store
from tests.store.test_statements import pg_store, rows

__all__ = ["pg_store"]


@contextmanager
def checkouts(store: Store) -> Iterator[list[int]]:
    """Connections taken from the store's pool meanwhile (one entry each)."""
    taken: list[int] = []

    def count(*_: Any) -> None:
        taken.append(threading.get_ident())

    sa.event.listen(store.engine, "checkout", count)
    try:
        yield taken
    finally:
        sa.event.remove(store.engine, "checkout", count)


def lookups(store: Store) -> None:
    assert len(store.has("case", [f"case:{i:05d}" for i in range(20)])) == 20
    assert len(store.ids_by_parents("case", ["doc:1", "doc:2"])) > 0
    assert store.state_many("ns", ["a", "b"]) == {}
    assert store.any_of("case")


def test_lookups_in_a_held_block_take_one_connection(any_store: Store) -> None:
    any_store.put_rows(rows(50))
    with checkouts(any_store) as taken:
        lookups(any_store)
    assert len(taken) >= 4  # a connection a lookup
    with checkouts(any_store) as taken, any_store.holding_reads():
        lookups(any_store)
        with any_store.holding_reads():  # within another: the outer one's
            lookups(any_store)
    assert len(taken) == 1


def test_a_held_connection_is_not_lent_to_another_thread(any_store: Store) -> None:
    any_store.put_rows(rows(50))
    found: list[set[str]] = []
    with checkouts(any_store) as taken, any_store.holding_reads():
        lookups(any_store)
        other = threading.Thread(target=lambda: found.append(any_store.has("case", ["case:00003"])))
        other.start()
        other.join()
    assert found == [{"case:00003"}]
    assert len(taken) == 2
    assert len(set(taken)) == 2  # one in this thread, one in the other


def test_reads_in_a_held_block_see_what_was_written_in_it(any_store: Store) -> None:
    with any_store.holding_reads():
        assert not any_store.any_of("case")
        any_store.put_rows(rows(5))
        assert any_store.has("case", ["case:00004"]) == {"case:00004"}


def test_postgresql_reads_run_in_autocommit_and_writes_stay_one_transaction(pg_store: Store) -> None:
    with pg_store.reading() as conn:
        assert conn.connection.dbapi_connection.autocommit is True  # type: ignore[union-attr]

    def write_then_fail() -> None:
        with pg_store.transaction() as conn:  # the pooled connection, reset
            assert conn.connection.dbapi_connection.autocommit is False  # type: ignore[union-attr]
            conn.exec_driver_sql(
                "INSERT INTO records (kind, id, parent_id, updated_at, payload) "
                "VALUES ('case', 'c', NULL, now(), '{}')"
            )
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert pg_store.has("case", ["c"]) == set()
