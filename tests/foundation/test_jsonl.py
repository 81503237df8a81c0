from __future__ import annotations

import json
from pathlib import Path

import pytest

from livemed.errors import InputFileError
from livemed.jsonl import export_store, import_jsonl, read_jsonl, write_jsonl
from livemed.records import RECORD_TYPES, Doc
from livemed.store import Store
from tests.foundation.factories import doc, every_record


def test_export_then_import_gives_equal_records(any_store: Store, tmp_path: Path) -> None:
    records = every_record()
    any_store.put(records)
    counts = export_store(any_store, tmp_path / "out")
    assert counts == {kind: 1 for kind in RECORD_TYPES}
    fresh = Store(tmp_path / "fresh.db")
    for kind in RECORD_TYPES:
        written, errors = import_jsonl(fresh, tmp_path / "out" / f"{kind}.jsonl")
        assert (written, errors) == (1, [])
    for record in records:
        assert fresh.get(type(record), record.id) == record


def test_single_file_export_mixes_kinds_and_reimports(sqlite_store: Store, tmp_path: Path) -> None:
    sqlite_store.put(every_record())
    path = tmp_path / "all.jsonl"
    export_store(sqlite_store, path)
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert sorted(kinds) == sorted(RECORD_TYPES)
    result = read_jsonl(path)
    assert len(result.records) == len(RECORD_TYPES)
    assert result.errors == []


def test_a_dotted_folder_name_is_a_folder(sqlite_store: Store, tmp_path: Path) -> None:
    sqlite_store.put([doc("1")])
    assert export_store(sqlite_store, tmp_path / "results.v2") == {"doc": 1}
    assert (tmp_path / "results.v2" / "doc.jsonl").is_file()


def test_bad_lines_are_reported_with_line_numbers_and_the_rest_loads(
    any_store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "docs.jsonl"
    write_jsonl([doc("1"), doc("2")], path)
    good = path.read_text().splitlines()
    lines = [
        good[0],
        "{not json",
        json.dumps({"kind": "doc", "source": "demo"}),
        json.dumps({"kind": "nope"}),
        json.dumps({**json.loads(good[0]), "source_id": "x" * 600}),  # PostgreSQL used to refuse the id
        "",
        "[1, 2]",
        good[1],
    ]
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe\n")
    written, errors = import_jsonl(any_store, path)
    assert written == 2
    assert [e.line for e in errors] == [2, 3, 4, 5, 7, 9]
    assert all(e.path == str(path) for e in errors)
    assert "invalid JSON" in errors[0].detail
    assert "source_id" in errors[1].detail
    assert "unknown record kind 'nope'" in errors[2].detail
    assert "source_id" in errors[3].detail
    assert "expected a JSON object" in errors[4].detail
    assert "UTF-8" in errors[5].detail
    assert str(errors[0]).startswith(f"{path}:2: ")
    assert any_store.count() == {"doc": 2}


def test_default_kind_applies_to_lines_without_one(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(doc("7").model_dump_json() + "\n")
    result = read_jsonl(path, default_kind="doc")
    assert isinstance(result.records[0], Doc)
    assert read_jsonl(path).errors[0].line == 1


def test_missing_file_is_a_clear_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="cannot open"):
        read_jsonl(tmp_path / "absent.jsonl")
