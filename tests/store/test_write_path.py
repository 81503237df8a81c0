"""The store's write path: `put`/`put_rows` through the compiled upsert write the same columns as a
SQLAlchemy Core insert, the last of a repeated id wins, one write time per transaction."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from livemed.records import Case, Narrative
from livemed.store import Store, StoredRow, stored_row
from livemed.store.schema import records_table


def case(n: int, query: str = "What now?") -> Case:
    return Case(
        doc_id=f"test:{n}",
        source="test",
        source_id=str(n),
        published=datetime(2025, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
        narrative=Narrative(),
        query=query,
        advice=["Rest."],
    )


def columns(store: Store, kind: str) -> dict[str, tuple[object, ...]]:
    query = sa.select(
        records_table.c.id,
        records_table.c.parent_id,
        records_table.c.published_at,
        records_table.c.updated_at,
        records_table.c.payload,
    ).where(records_table.c.kind == kind)
    with store.engine.connect() as conn:
        return {row.id: tuple(row[1:]) for row in conn.execute(query)}


def test_put_writes_what_a_core_insert_writes(any_store: Store) -> None:
    records = [case(n) for n in range(3)]
    any_store.put(records)
    written = columns(any_store, "case")
    core = [{**stored_row(r)._asdict(), "kind": "core", "updated_at": written[r.id][2]} for r in records]
    with any_store.engine.begin() as conn:
        conn.execute(records_table.insert(), core)
    assert columns(any_store, "core") == written
    if any_store.dialect == "sqlite":  # the stored text of the times, as SQLAlchemy writes it
        with any_store.engine.connect() as conn:
            texts = conn.exec_driver_sql(
                "SELECT kind, published_at, updated_at FROM records ORDER BY kind, id"
            ).all()
        assert {(p, u) for _, p, u in texts if _ == "case"} == {(p, u) for _, p, u in texts if _ == "core"}
        assert texts[0][1] == "2025-03-01 12:30:05.123456"
    for record in records:
        assert any_store.get(Case, record.id) == record


def test_the_last_of_a_repeated_id_wins_and_a_batch_shares_one_write_time(any_store: Store) -> None:
    rows = [stored_row(case(1, "first?")), stored_row(case(2)), stored_row(case(1, "second?"))]
    assert any_store.put_rows(rows) == 2
    stored = any_store.get(Case, "case:test:1")
    assert stored is not None
    assert stored.query == "second?"
    times = {values[2] for values in columns(any_store, "case").values()}
    assert len(times) == 1
    any_store.put([case(1, "third?")])  # an upsert: the row is replaced, the other kept
    assert any_store.count()["case"] == 2
    again = any_store.get(Case, "case:test:1")
    assert again is not None
    assert again.query == "third?"


def test_a_row_without_a_date_and_the_other_tables(any_store: Store) -> None:
    any_store.put_rows([StoredRow("case", "case:x", None, None, case(9).model_dump_json())])
    assert columns(any_store, "case")["case:x"][:2] == (None, None)
    any_store.state_set("ns", "k", {"v": 1})
    any_store.state_set("ns", "k", {"v": 2})
    assert any_store.state_get("ns", "k") == {"v": 2}
    any_store.signatures_put([("d1", "e", b"\x00\x01"), ("d1", "e2", b"\x02")])
    assert list(any_store.signatures_iter()) == [("d1", "e2", b"\x02")]
    any_store.cache_put_many([("k1", "m", {"a": 1}), ("k2", "m", '{"b": 2}')])
    assert any_store.cache_get_many(["k1", "k2"]) == {"k1": {"a": 1}, "k2": {"b": 2}}


def test_a_stamp_changes_when_a_record_of_its_kinds_is_written_or_deleted(any_store: Store) -> None:
    assert any_store.stamp(["case", "grade"]) == (("case", 0, None), ("grade", 0, None))
    any_store.put([case(1), case(2)])
    first = any_store.stamp(["case", "grade"])
    assert [n for _, n, _ in first] == [2, 0]
    assert any_store.stamp(["case", "grade"]) == first  # nothing written: the same stamp
    any_store.put([case(1, "What next?")])  # an overwrite: as many records, a later write
    again = any_store.stamp(["case", "grade"])
    assert again[0][1] == 2
    assert again != first
    any_store.delete("case", ["case:test:2"])
    assert any_store.stamp(["case"])[0][1] == 1
