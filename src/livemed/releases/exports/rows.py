"""What a release export carries: the public items (embargo, licences) as flat rows, and the manifest.

The embargo counts back from the release's own `until` date (not from today), so the same release
exported twice, anywhere, carries the same cases: with `embargo_days=N`, a case published in the last
N days up to `until` stays in the store (the private-latest set) and out of the export.

Every row carries the case's content hash; a row whose licence lets the text out carries the case and
rubric content too (`case_json`, `rubric_json`: their canonical JSON, from which the hash is
recomputed), a restricted one only its ids, link, date and hash. The manifest lists, besides each
exported case's content hash, each row's own hash (`row_hash`: sha256 of its canonical JSON), so any
format's rows — HealthBench lines and Inspect samples too — can be checked as they were written.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from livemed.records import Release, ReleaseItem
from livemed.releases.licences import licence_of, redistributable
from livemed.releases.manifest import canonical, content, items, release_hash, sha256
from livemed.store import Store

MANIFEST_FILE = "manifest.json"
ROW_FILES = {  # each format's file of rows, the one `release verify` checks
    "jsonl": "cases.jsonl",
    "parquet": "cases.parquet",
    "healthbench": "healthbench.jsonl",
    "hf": "data/test.jsonl",
    "inspect": "samples.jsonl",
}
ROW_IDS = {"healthbench": "prompt_id"}  # the key of a row's id where it is not `id`


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


@dataclass
class ExportResult:
    selection: Selection
    files: list[Path]
    carried: list[ReleaseItem]  # the cases written
    rows: dict[str, str]  # each written row's id -> its `row_hash`

    @property
    def written(self) -> int:
        return len(self.carried)

    @property
    def left_out(self) -> int:
        """Cases a format could not carry (HealthBench and Inspect: without their text)."""
        return len(self.selection.items) - len(self.carried)


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


def row_hash(record: dict[str, Any]) -> str:
    """The hash of one exported row: sha256 of its canonical JSON (`release verify` recomputes it)."""
    return sha256(canonical(record))


def row_hashes(records: list[dict[str, Any]], key: str = "id") -> dict[str, str]:
    """Each row's id and hash, for the manifest's `row_hashes`."""
    return {record[key]: row_hash(record) for record in records}


def manifest(result: ExportResult, fmt: str) -> dict[str, Any]:
    """The export's manifest: the release hash (of the whole release, as stored), the hash of what this
    export carries, every exported case's hash and every written row's."""
    selection = result.selection
    release = selection.release
    exported = {item.case.id: item.content_hash for item in result.carried}
    return {
        "release": release.name,
        "until": release.until.isoformat(),
        "release_hash": release.release_hash,
        "export_hash": release_hash(exported),
        "format": fmt,
        "cases": len(exported),
        "left_out": result.left_out,
        "embargo_days": selection.embargo_days,
        "embargoed": selection.embargoed,
        "text_withheld": dict(selection.restricted),
        "hashes": exported,
        "row_hashes": result.rows,
    }


def write_manifest(out: Path, result: ExportResult, fmt: str) -> Path:
    path = out / MANIFEST_FILE
    path.write_text(json.dumps(manifest(result, fmt), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, records: Iterator[dict[str, Any]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    return count
