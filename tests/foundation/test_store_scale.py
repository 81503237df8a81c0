"""Store version 3 (the parent index carries the id), its migration, and the narrow reads scoring uses."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.errors import StoreRecordError
from livemed.records import Grade
from livemed.store import Store, maintenance


def _grade(answer: str, criterion: str, met: bool = True) -> Grade:
    return Grade(answer_id=answer, case_id="case:x", criterion_id=criterion, judge="j", met=met)


def _parent_index_columns(store: Store) -> list[str | None]:
    with store.engine.connect() as conn:
        indexes = sa.inspect(conn).get_indexes("records")
    return next(ix["column_names"] for ix in indexes if ix["name"] == "ix_records_kind_parent")


def test_a_version_2_store_gets_the_parent_index_with_the_id(any_store: Store) -> None:
    any_store.put([_grade("answer:a", "c1")])
    with any_store.engine.begin() as conn:  # put the store back the way version 2 made it
        conn.execute(sa.text("DROP INDEX ix_records_kind_parent"))
        conn.execute(sa.text("CREATE INDEX ix_records_kind_parent ON records (kind, parent_id)"))
        conn.execute(sa.text("UPDATE livemed_meta SET value = '2' WHERE key = 'schema_version'"))
    assert _parent_index_columns(any_store) == ["kind", "parent_id"]
    with Store(any_store.url) as store:
        assert store.schema_version == maintenance.SCHEMA_VERSION == 3
        assert _parent_index_columns(store) == ["kind", "parent_id", "id"]
        assert [g.id for g in store.by_parents(Grade, ["answer:a"])] == [_grade("answer:a", "c1").id]


class _Met(TypedDict):
    answer_id: str
    met: bool


def test_fields_by_parents_reads_only_the_named_fields(any_store: Store) -> None:
    any_store.put([_grade("answer:a", "c1", True), _grade("answer:a", "c2", False), _grade("answer:b", "c1")])
    rows = sorted(any_store.fields_by_parents("grade", ["answer:a"], TypeAdapter(_Met)))
    assert rows == [
        ("grade:answer:a:c1:j", {"answer_id": "answer:a", "met": True}),
        ("grade:answer:a:c2:j", {"answer_id": "answer:a", "met": False}),
    ]
    assert sorted(any_store.ids_by_parents("grade", ["answer:b", "answer:none"])) == ["grade:answer:b:c1:j"]


def test_a_stored_payload_that_does_not_fit_the_view_is_a_one_line_error(any_store: Store) -> None:
    class _Wrong(TypedDict):
        met: int
        missing_field: str

    any_store.put([_grade("answer:a", "c1")])
    with pytest.raises(StoreRecordError, match="stored grade 'grade:answer:a:c1:j' does not validate"):
        list(any_store.fields_by_parents("grade", ["answer:a"], TypeAdapter(_Wrong)))


def test_updated_at_by_id_and_by_parent_and_any_of(any_store: Store) -> None:
    assert not any_store.any_of("grade")
    any_store.put([_grade("answer:a", "c1")])
    first = any_store.updated_at("grade", ["grade:answer:a:c1:j", "grade:none"])
    assert list(first) == ["grade:answer:a:c1:j"]
    any_store.put([_grade("answer:a", "c2")])
    by_parent = any_store.updated_at("grade", ["answer:a", "answer:none"], by_parent=True)
    later = any_store.updated_at("grade", ["grade:answer:a:c2:j"])["grade:answer:a:c2:j"]
    assert by_parent == {"answer:a": later}
    assert later >= first["grade:answer:a:c1:j"]
    assert any_store.any_of("grade")
    assert not any_store.any_of("score")


def _stat_rows(path: Path) -> int | None:
    with sqlite3.connect(path) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone():
            return None
        row = conn.execute(
            "SELECT stat FROM sqlite_stat1 WHERE idx = 'sqlite_autoindex_records_1'"
        ).fetchone()
    return int(row[0].split()[0]) if row else None


def test_a_large_store_is_analysed_at_close_and_again_when_it_has_grown_4x(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "ANALYZE_FROM", 40)
    path = tmp_path / "s.db"
    with Store(path) as store:
        store.put([_grade(f"answer:{i}", "c") for i in range(30)])
    assert _stat_rows(path) is None  # small: no statistics (the indexes need none)
    with Store(path) as store:
        store.put([_grade(f"answer:{i}", "c") for i in range(30, 50)])
    assert _stat_rows(path) == 50
    with Store(path) as store:
        store.put([_grade(f"answer:{i}", "c") for i in range(50, 150)])  # 3x: statistics kept
    assert _stat_rows(path) == 50
    with Store(path) as store:
        store.put([_grade(f"answer:{i}", "c") for i in range(150, 260)])  # over 4x: analysed again
        busy = store.engine.connect().exec_driver_sql("PRAGMA busy_timeout").scalar()
    assert _stat_rows(path) == 260
    with Store(path) as store, store.engine.connect() as conn:  # the wait for a lock is unchanged
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == busy > 0  # type: ignore[operator]
