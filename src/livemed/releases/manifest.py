"""Content hashes with one canonical serialisation, and the making, retiring and comparing of releases.

The hash of a case is the sha256 of the canonical JSON of its case and rubric *content*: the records'
JSON (pydantic, mode "json") without their `provenance` block (which holds the time and the livemed
version that made them), keys sorted, no whitespace, UTF-8 — so the same content hashes the same on
any machine, in any store, exported in any format. The release hash is the sha256 of the manifest's
sorted `id<TAB>hash` lines.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

from livemed.errors import ConfigError, UserError
from livemed.records import Case, Doc, Record, Release, ReleaseItem, Retirement, Rubric
from livemed.store import Store


def canonical(value: Any) -> str:
    """The canonical JSON text of a JSON-like value: sorted keys, no whitespace, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content(record: Record) -> dict[str, Any]:
    """A record's content: its JSON without the provenance block."""
    return record.model_dump(mode="json", exclude={"provenance"})


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def case_hash(case: Case, rubric: Rubric) -> str:
    """The content hash of one case with its rubric."""
    return sha256(canonical({"case": content(case), "rubric": content(rubric)}))


def release_hash(manifest: dict[str, str]) -> str:
    """The hash of a whole release: over its sorted `id<TAB>hash` lines."""
    return sha256("".join(f"{key}\t{manifest[key]}\n" for key in sorted(manifest)))


def retired(store: Store) -> dict[str, Retirement]:
    return {r.case_id: r for r in store.iter(Retirement)}


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # `Release.name`: also a folder and file name


def check_name(name: str) -> None:
    """A release name is letters, digits, `.`, `_` and `-`, starting with a letter or digit (≤ 128)."""
    if not NAME.fullmatch(name):
        raise ConfigError(
            f"a release name is letters, digits, '.', '_' and '-' (starting with a letter or digit, "
            f"at most 128), got {name!r}"
        )


def get_release(store: Store, name: str) -> Release:
    found = store.get(Release, f"release:{name}")
    if found is None:
        known = ", ".join(r.name for r in store.iter(Release)) or "none yet"
        raise UserError(f"no release named {name!r} in {store.location} (releases: {known})")
    return found


def items(store: Store, release: Release) -> Iterator[ReleaseItem]:
    """The frozen cases of a release, in case id order."""
    yield from store.iter(ReleaseItem, parent_id=release.id)


def create_release(store: Store, name: str, until: date, *, status: str | None = None) -> Release:
    """Freeze the cases published by the end of `until` (with `status`, when given) that have a rubric
    and are not retired. A name is used once: a release never changes."""
    check_name(name)
    if store.get(Release, f"release:{name}") is not None:
        raise UserError(f"release {name!r} exists already (releases never change): choose another name")
    end = datetime.combine(until, time.max, UTC)
    gone = retired(store)
    left_out: Counter[str] = Counter()
    frozen: list[ReleaseItem] = []
    for case in store.iter(Case, until=end):
        if status and case.status != status:
            left_out["other status"] += 1
        elif case.id in gone:
            left_out["retired"] += 1
        elif (rubric := store.get(Rubric, f"rubric:{case.id}")) is None:
            left_out["no rubric"] += 1
        else:
            doc = store.get(Doc, case.doc_id)
            licence = doc.licence if doc is not None else None
            item = ReleaseItem(
                release=name, case=case, rubric=rubric, licence=licence, content_hash=case_hash(case, rubric)
            )
            frozen.append(item)
    manifest = {item.case.id: item.content_hash for item in frozen}
    counts = Counter(f"source: {item.case.source}" for item in frozen)
    counts.update({f"left out: {reason}": n for reason, n in left_out.items()})
    release = Release(
        name=name,
        until=until,
        release_hash=release_hash(manifest),
        manifest=manifest,
        counts=dict(counts),
        status=status,
    )
    store.put([*frozen, release])  # the items first: a release record always has all its items
    return release


def retire(store: Store, case_id: str, reason: str) -> Retirement:
    """Take a case out of every later release (the ones made already keep it)."""
    if store.get(Case, case_id) is None:
        raise UserError(f"no case {case_id!r} in {store.location}")
    retirement = Retirement(case_id=case_id, reason=reason)
    store.put([retirement])
    return retirement


@dataclass
class Diff:
    """What changed from release A to release B."""

    added: list[str] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)  # (case id, why: a retirement's reason)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0


def diff(store: Store, a: Release, b: Release) -> Diff:
    """Cases added, removed (with the retirement reason, when retired) and changed (another hash)."""
    gone = retired(store)
    out = Diff(added=sorted(set(b.manifest) - set(a.manifest)))
    for key in sorted(set(a.manifest) - set(b.manifest)):
        why = f"retired: {gone[key].reason}" if key in gone else "not in the later selection"
        out.removed.append((key, why))
    for key in sorted(set(a.manifest) & set(b.manifest)):
        if a.manifest[key] != b.manifest[key]:
            out.changed.append(key)
        else:
            out.unchanged += 1
    return out
