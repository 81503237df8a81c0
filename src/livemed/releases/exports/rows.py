"""What a release export carries: the public items (embargo, licences) as flat rows, and the manifest.

The embargo counts back from the release's own `until` date (not from today), so the same release
exported twice, anywhere, carries the same cases: with `embargo_days=N`, a case published in the last
N days up to `until` stays in the store (the private-latest set) and out of the export.

Every row carries the case's content hash; a row whose licence lets the text out carries the case and
rubric content too (`case_json`, `rubric_json`: their canonical JSON, from which the hash is
recomputed), a restricted one only its ids, link, date and hash.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from livemed.errors import UserError
from livemed.records import Release, ReleaseItem
from livemed.releases.licences import licence_of, redistributable
from livemed.releases.manifest import canonical, content, items, release_hash
from livemed.store import Store

MANIFEST_FILE = "manifest.json"
ROW_FILES = ("cases.jsonl", "data/test.jsonl")  # the jsonl and hf exports' rows


@dataclass
class Selection:
    """The items a public export carries, and what it keeps back."""

    release: Release
    embargo_days: int
    include_text: bool
    items: list[ReleaseItem] = field(default_factory=list)
    embargoed: int = 0
    restricted: Counter[str] = field(default_factory=Counter)  # licence -> cases exported as ids and links

    @property
    def embargo_from(self) -> datetime | None:
        """Cases published after this time are held back (None: no embargo)."""
        if not self.embargo_days:
            return None
        return datetime.combine(self.release.until, time.max, UTC) - timedelta(days=self.embargo_days)

    def with_text(self, item: ReleaseItem) -> bool:
        return self.include_text or redistributable(item)


def select(store: Store, release: Release, *, embargo_days: int = 0, include_text: bool = False) -> Selection:
    chosen = Selection(release, embargo_days, include_text)
    start = chosen.embargo_from
    for item in items(store, release):
        if start is not None and item.case.published > start:
            chosen.embargoed += 1
            continue
        chosen.items.append(item)
        if not chosen.with_text(item):
            chosen.restricted[licence_of(item)] += 1
    return chosen


def row(item: ReleaseItem, with_text: bool) -> dict[str, Any]:
    """One case as a flat row (the same keys and types for every row: Parquet and `datasets` need it)."""
    from livemed.rubrics.prompts import narrative_text

    case, rubric = item.case, item.rubric
    criteria = [
        {"id": c.id, "text": c.text, "points": float(c.value), "axis": c.axis, "polarity": c.polarity}
        for c in rubric.criteria
    ]
    return {
        "id": case.id,
        "release": item.release,
        "source": case.source,
        "source_id": case.source_id,
        "url": case.url,
        "published": case.published.astimezone(UTC).isoformat(),
        "licence": licence_of(item),
        "text_included": with_text,
        "narrative": narrative_text(case) if with_text else None,
        "query": case.query if with_text else None,
        "advice": list(case.advice) if with_text else [],
        "criteria": criteria if with_text else [],
        "specialties": list(case.specialties),
        "content_hash": item.content_hash,
        "case_json": canonical(content(case)) if with_text else None,
        "rubric_json": canonical(content(rubric)) if with_text else None,
    }


def rows(selection: Selection) -> Iterator[dict[str, Any]]:
    for item in selection.items:
        yield row(item, selection.with_text(item))


def manifest(selection: Selection, fmt: str) -> dict[str, Any]:
    """The export's manifest: the release hash (of the whole release, as stored), the hash of what this
    export carries, and every exported case's hash."""
    release = selection.release
    exported = {item.case.id: item.content_hash for item in selection.items}
    return {
        "release": release.name,
        "until": release.until.isoformat(),
        "release_hash": release.release_hash,
        "export_hash": release_hash(exported),
        "format": fmt,
        "cases": len(exported),
        "embargo_days": selection.embargo_days,
        "embargoed": selection.embargoed,
        "text_withheld": dict(selection.restricted),
        "hashes": exported,
    }


def write_manifest(out: Path, selection: Selection, fmt: str) -> Path:
    path = out / MANIFEST_FILE
    path.write_text(json.dumps(manifest(selection, fmt), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, records: Iterator[dict[str, Any]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    return count


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


def verify(folder: Path) -> tuple[int, int, list[str]]:
    """Check an exported folder against its manifest: every row's content hash recomputed from its
    `case_json`/`rubric_json` (rows with text) and its visible columns (advice, criteria, ...) equal to
    what that JSON gives, every row listed in the manifest with that hash, and the export hash over the
    manifest's hashes. Returns (rows checked by content, rows, problems)."""
    from livemed.releases.manifest import sha256

    manifest_path = folder / MANIFEST_FILE
    try:
        found = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{manifest_path}: cannot read the manifest ({exc})") from None
    hashes: dict[str, str] = found.get("hashes", {})
    data = next((folder / name for name in ROW_FILES if (folder / name).exists()), None)
    if data is None:
        raise UserError(f"{folder}: no {' or '.join(ROW_FILES)} to verify")
    problems, by_content, count = [], 0, 0
    for number, line in enumerate(data.read_text(encoding="utf-8").splitlines(), start=1):
        row, count = json.loads(line), count + 1
        where = f"{data.name}:{number} ({row.get('id')})"
        if hashes.get(row["id"]) != row["content_hash"]:
            problems.append(f"{where}: not in the manifest with this hash")
        if row.get("case_json") is not None:
            content_of = {"case": json.loads(row["case_json"]), "rubric": json.loads(row["rubric_json"])}
            by_content += 1
            if sha256(canonical(content_of)) != row["content_hash"]:
                problems.append(f"{where}: its content does not hash to its content_hash")
            problems += [f"{where}: {problem}" for problem in visible_mismatches(row)]
    if count != len(hashes):
        problems.append(f"{data.name}: {count} row(s), the manifest lists {len(hashes)}")
    if release_hash(hashes) != found.get("export_hash"):
        problems.append(f"{MANIFEST_FILE}: export_hash does not match its hashes")
    return by_content, count, problems
