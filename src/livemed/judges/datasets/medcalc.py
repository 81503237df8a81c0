"""MedCalc-Bench (the v1.0 CSV): one item per row, its entities read as a Python literal."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.judges.datasets.csvfile import csv_rows
from livemed.judges.datasets.items import CalcItem

COLUMNS = (
    "Row Number",
    "Calculator ID",
    "Calculator Name",
    "Output Type",
    "Patient Note",
    "Question",
    "Relevant Entities",
    "Ground Truth Answer",
    "Lower Limit",
    "Upper Limit",
)
OUTPUT_TYPES = ("decimal", "integer", "date")


def main_file(path: Path) -> Path:
    if path.is_dir():
        found = sorted(path.glob("test_data*.csv"))
        if not found:
            raise InputFileError(path, "no test_data*.csv here")
        return found[0]
    return path


def _item(row: dict[str, Any]) -> CalcItem:
    for column in COLUMNS:
        if not str(row.get(column) or "").strip():
            raise ValueError(f"missing field {column!r}")
    output_type = row["Output Type"].strip()
    if output_type not in OUTPUT_TYPES:
        raise ValueError(f"Output Type must be decimal, integer or date, got {output_type!r}")
    try:
        entities = ast.literal_eval(row["Relevant Entities"])
    except (ValueError, SyntaxError):
        raise ValueError("Relevant Entities is not a Python dict literal") from None
    if not isinstance(entities, dict):
        raise ValueError("Relevant Entities is not a dict")
    try:
        calculator_id = int(row["Calculator ID"])
    except ValueError:
        raise ValueError(f"Calculator ID {row['Calculator ID']!r} is not a number") from None
    return CalcItem(
        item_id=row["Row Number"].strip(),
        calculator_id=calculator_id,
        calculator=row["Calculator Name"].strip(),
        output_type=output_type,
        note=row["Patient Note"],
        question=row["Question"],
        entities=entities,
        answer=row["Ground Truth Answer"].strip(),
        lower=row["Lower Limit"].strip(),
        upper=row["Upper Limit"].strip(),
    )


def load(path: Path) -> Iterator[CalcItem | InputFileError]:
    """Every row (streamed); a bad row is an error naming file:line (the row's first line)."""
    file = main_file(path)
    for line, row in csv_rows(file, COLUMNS, "MedCalc-Bench"):
        try:
            yield _item(row)
        except ValueError as exc:
            yield InputFileError(file, str(exc), line)
