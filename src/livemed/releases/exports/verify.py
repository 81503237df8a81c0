"""`release verify`: an export folder checked against its `manifest.json`, whatever its format.

Every row (a JSONL line, a Parquet row, a HealthBench line, an Inspect sample) must hash to the
`row_hashes` entry of its id; a row that carries `content_hash` must be listed in `hashes` with it; a
row with `case_json`/`rubric_json` is rehashed from that content and its visible columns (advice,
criteria, ...) are compared with what that content gives; the count of rows and the export hash over
`hashes` must match. A changed row is named by file, line (1-based, Parquet: row) and id, with the most
specific reason found.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from livemed.errors import UserError
from livemed.records import ReleaseItem
from livemed.releases.exports.rows import MANIFEST_FILE, ROW_FILES, ROW_IDS, row, row_hash
from livemed.releases.manifest import canonical, release_hash, sha256

VISIBLE = (
    "id",
    "source",
    "source_id",
    "url",
    "published",
    "narrative",
    "query",
    "advice",
    "criteria",
    "specialties",
)


def visible_mismatches(found: dict[str, Any]) -> list[str]:
    """The visible columns of a row with text that differ from what its `case_json`/`rubric_json` give
    (rebuilt with `row`, the export's own function): readers use those columns, the hash covers the JSON."""
    from pydantic import ValidationError

    from livemed.records import Case, Rubric

    try:
        case = Case.model_validate_json(found["case_json"])
        rubric = Rubric.model_validate_json(found["rubric_json"])
    except ValidationError as exc:
        return [f"case_json/rubric_json are not a case and rubric ({exc.error_count()} error(s))"]
    item = ReleaseItem(release=found.get("release") or "-", case=case, rubric=rubric, content_hash="0" * 64)
    rebuilt = row(item, with_text=True)
    return [
        f"column {name!r} differs from its case_json/rubric_json"
        for name in VISIBLE
        if found.get(name) != rebuilt[name]
    ]


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST_FILE
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read the manifest ({exc})") from None
    if not isinstance(found, dict) or not isinstance(found.get("hashes"), dict):
        raise UserError(f"{path}: not a livemed export manifest (no `hashes` of the exported cases)")
    if found.get("format") not in ROW_FILES:
        fmt = found.get("format")
        raise UserError(f"{path}: format {fmt!r} is none of livemed's exports ({', '.join(ROW_FILES)})")
    return found


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any] | None]:
    """Each line as a JSON object, None where it is not one (a file that is not UTF-8 is one error)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
    for line in text.splitlines():
        try:
            found = json.loads(line)
        except ValueError:
            found = None
        yield found if isinstance(found, dict) else None


def _parquet_rows(path: Path) -> Iterator[dict[str, Any] | None]:
    """Each Parquet row as the JSONL row it was written from (timestamps back to ISO text)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("verifying a parquet export needs pyarrow: pip install 'livemed[export]'") from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise UserError(f"{path}: cannot read it as Parquet ({exc})") from None
    for record in table.to_pylist():
        yield {k: v.astimezone(UTC).isoformat() if isinstance(v, datetime) else v for k, v in record.items()}


def _rows(path: Path, fmt: str) -> Iterator[dict[str, Any] | None]:
    return _parquet_rows(path) if fmt == "parquet" else _jsonl_rows(path)


def _content_problems(found: dict[str, Any]) -> list[str]:
    """A row with text: its content rehashed, its visible columns against that content."""
    try:
        content_of = {"case": json.loads(found["case_json"]), "rubric": json.loads(found["rubric_json"])}
    except (TypeError, ValueError):
        return ["case_json/rubric_json are not JSON"]
    problems = []
    if sha256(canonical(content_of)) != found.get("content_hash"):
        problems.append("its content does not hash to its content_hash")
    return problems + visible_mismatches(found)


def _listed(table: dict[str, str], key: Any) -> str | None:
    """The manifest's entry for a row's id (None for none, or for an id that is not text)."""
    return table.get(key) if isinstance(key, str) else None


def _row_problems(found: dict[str, Any], key: Any, manifest: dict[str, Any]) -> list[str]:
    """What is wrong with one row: the most specific reasons, else that it is not the row written."""
    problems = []
    if "content_hash" in found and _listed(manifest["hashes"], found.get("id")) != found["content_hash"]:
        problems.append("not in the manifest with this hash")
    if found.get("case_json") is not None:
        problems += _content_problems(found)
    expected = manifest.get("row_hashes")  # absent from manifests written before livemed kept them
    if not problems and expected is not None and _listed(expected, key) != row_hash(found):
        problems.append("not the row exported (its row hash is not the manifest's)")
    return problems


def verify(folder: Path) -> tuple[int, int, list[str]]:
    """Check an exported folder of any format against its manifest (see the module's text).
    Returns (rows rehashed from their content, rows, problems)."""
    manifest = read_manifest(folder)
    fmt = manifest["format"]
    data = folder / ROW_FILES[fmt]
    if not data.exists():
        raise UserError(f"{folder}: no {ROW_FILES[fmt]} to verify (its manifest says format {fmt})")
    id_key = ROW_IDS.get(fmt, "id")
    problems, by_content, count = [], 0, 0
    for number, found in enumerate(_rows(data, fmt), start=1):
        count += 1
        if found is None:
            problems.append(f"{data.name}:{number}: not a JSON object")
            continue
        by_content += found.get("case_json") is not None
        where = f"{data.name}:{number} ({found.get(id_key)})"
        problems += [f"{where}: {problem}" for problem in _row_problems(found, found.get(id_key), manifest)]
    listed = len(manifest.get("row_hashes") or manifest["hashes"])
    if count != listed:
        problems.append(f"{data.name}: {count} row(s), the manifest lists {listed}")
    if release_hash(manifest["hashes"]) != manifest.get("export_hash"):
        problems.append(f"{MANIFEST_FILE}: export_hash does not match its hashes")
    return by_content, count, problems
