"""The table-shaped exports: JSONL rows, the same rows as Parquet (pyarrow), and HealthBench JSONL."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livemed.errors import UserError
from livemed.releases.exports.rows import (
    ROW_FILES,
    ExportResult,
    Selection,
    row_hash,
    row_hashes,
    rows,
    write_jsonl,
)

if TYPE_CHECKING:
    import pyarrow as pa

CASES_JSONL = ROW_FILES["jsonl"]
CASES_PARQUET = ROW_FILES["parquet"]
HEALTHBENCH_JSONL = ROW_FILES["healthbench"]


def write_jsonl_export(selection: Selection, out: Path) -> ExportResult:
    path = out / CASES_JSONL
    data = list(rows(selection))
    write_jsonl(path, iter(data))
    return ExportResult(selection, [path], selection.items, row_hashes(data))


def parquet_schema() -> pa.Schema:
    import pyarrow as pa

    criterion = pa.struct(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("points", pa.float64()),
            ("axis", pa.string()),
            ("polarity", pa.string()),
        ]
    )
    strings = pa.list_(pa.string())
    columns: list[tuple[str, Any]] = [
        ("id", pa.string()),
        ("release", pa.string()),
        ("source", pa.string()),
        ("source_id", pa.string()),
        ("url", pa.string()),
        ("published", pa.timestamp("us", tz="UTC")),
        ("licence", pa.string()),
        ("text_included", pa.bool_()),
        ("narrative", pa.string()),
        ("query", pa.string()),
        ("advice", strings),
        ("criteria", pa.list_(criterion)),
        ("specialties", strings),
        ("content_hash", pa.string()),
        ("case_json", pa.string()),
        ("rubric_json", pa.string()),
    ]
    return pa.schema(columns)


def write_parquet_export(selection: Selection, out: Path) -> ExportResult:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("the parquet format needs pyarrow: pip install 'livemed[export]'") from None
    data = list(rows(selection))
    typed = [{**r, "published": datetime.fromisoformat(r["published"])} for r in data]  # a timestamp column
    path = out / CASES_PARQUET
    pq.write_table(pa.Table.from_pylist(typed, schema=parquet_schema()), path)
    return ExportResult(selection, [path], selection.items, row_hashes(data))


def write_healthbench_export(selection: Selection, out: Path) -> ExportResult:
    """HealthBench's JSONL (the prompt is the patient's message, the rubric its criteria); a case whose
    text may not be exported cannot be a HealthBench example and is left out (counted)."""
    from livemed.answer.ask import conversation
    from livemed.interop.healthbench import to_healthbench

    path = out / HEALTHBENCH_JSONL
    carried, hashes = [], {}
    with path.open("w", encoding="utf-8") as handle:
        for item in selection.items:
            if not selection.with_text(item):
                continue
            prompt = [{"role": m["role"], "content": m["content"]} for m in conversation(item.case)]
            line = to_healthbench(item.case, item.rubric, prompt)
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            carried.append(item)
            hashes[line["prompt_id"]] = row_hash(line)
    return ExportResult(selection, [path], carried, hashes)
