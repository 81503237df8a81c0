"""Store version 3 (the parent index carries the id), its migration, and the narrow reads scoring uses."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from pydantic import TypeAdapter
from typing_extensions import TypedDict

import livemed.store as store_module
from livemed.errors import StoreRecordError
from livemed.records import Grade
from livemed.store import Store


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
        assert store.schema_version == store_module.SCHEMA_VERSION == 3
        assert _parent_index_columns(store) == ["kind", "parent_id", "id"]
        assert [g.id for g in store.by_parents(Grade, ["answer:a"])] == [_grade("answer:a", "c1").id]
        if store.dialect == "sqlite":  # the migration left fresh planner statistics behind
            with store.engine.connect() as conn:
                stats = conn.execute(sa.text("SELECT idx FROM sqlite_stat1")).scalars().all()
            assert "ix_records_kind_parent" in stats


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
