"""Write analysis tables as CSV (nested dicts flattened to `parent.key` columns) and JSON."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from livemed.common.atomic import write_text, writing_text


def flatten(row: BaseModel | dict[str, Any]) -> dict[str, Any]:
    data = row.model_dump(mode="json") if isinstance(row, BaseModel) else dict(row)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            for sub, item in value.items():
                out[f"{key}.{sub}"] = item
        elif isinstance(value, list):
            out[key] = ";".join(str(v) for v in value)
        else:
            out[key] = value
    return out


def clean_json(value: Any) -> Any:
    """Non-finite floats become None, so the JSON is valid everywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    return value


def write_table(
    out_dir: Path,
    name: str,
    rows: Sequence[BaseModel],
    extra: BaseModel | None = None,
    *,
    context: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write `name.csv` and `name.json`; the JSON's `summary` holds `extra` (e.g. a contamination
    summary) merged with `context` (the scores it was computed from: convention, judge, failure policy)."""
    flat = [flatten(r) for r in rows]
    columns: list[str] = []
    for row in flat:
        columns.extend(c for c in row if c not in columns)
    csv_path = out_dir / f"{name}.csv"
    with writing_text(csv_path, newline="") as handle:  # each file whole, or as it was
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(flat)
    payload: dict[str, Any] = {"rows": [r.model_dump(mode="json") for r in rows]}
    summary = {**(context or {}), **(extra.model_dump(mode="json") if extra is not None else {})}
    if summary:
        payload["summary"] = summary
    json_path = out_dir / f"{name}.json"
    write_text(json_path, json.dumps(clean_json(payload), indent=2, allow_nan=False) + "\n")
    return [csv_path, json_path]
