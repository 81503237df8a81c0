"""The table-shaped exports: JSONL rows, the same rows as Parquet (pyarrow), and HealthBench JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livemed.errors import UserError
from livemed.releases.exports.rows import Selection, rows, write_jsonl

if TYPE_CHECKING:
    import pyarrow as pa

    from livemed.releases.exports import ExportResult

CASES_JSONL = "cases.jsonl"
CASES_PARQUET = "cases.parquet"
HEALTHBENCH_JSONL = "healthbench.jsonl"


def write_jsonl_export(selection: Selection, out: Path) -> ExportResult:
    from livemed.releases.exports import ExportResult

    path = out / CASES_JSONL
    return ExportResult(selection, [path], write_jsonl(path, rows(selection)))


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
        ("published", pa.string()),
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
    from livemed.releases.exports import ExportResult

    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("the parquet format needs pyarrow: pip install 'livemed[export]'") from None
    data = list(rows(selection))
    path = out / CASES_PARQUET
    pq.write_table(pa.Table.from_pylist(data, schema=parquet_schema()), path)
    return ExportResult(selection, [path], len(data))


def write_healthbench_export(selection: Selection, out: Path) -> ExportResult:
    """HealthBench's JSONL (the prompt is the patient's message, the rubric its criteria); a case whose
    text may not be exported cannot be a HealthBench example and is left out (counted)."""
    from livemed.grading.answer import conversation
    from livemed.interop.healthbench import to_healthbench
    from livemed.releases.exports import ExportResult

    path = out / HEALTHBENCH_JSONL
    written = left_out = 0
    with path.open("w", encoding="utf-8") as handle:
        for item in selection.items:
            if not selection.with_text(item):
                left_out += 1
                continue
            prompt = [{"role": m["role"], "content": m["content"]} for m in conversation(item.case)]
            handle.write(
                json.dumps(to_healthbench(item.case, item.rubric, prompt), ensure_ascii=False) + "\n"
            )
            written += 1
    return ExportResult(selection, [path], written, left_out)
