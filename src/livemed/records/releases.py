"""Releases: frozen, content-hashed snapshots of cases and rubrics, and the retirement of cases.

A `Release` holds its manifest (record id → content hash) and one release hash over it; each of its
cases is frozen with its rubric in a `ReleaseItem` (so later curation never changes an old release).
A `Retirement` takes a case out of every release made after it; old releases keep it.
"""

from __future__ import annotations

from datetime import date
from typing import ClassVar

from pydantic import AwareDatetime, Field

from livemed.records.base import Record, utcnow
from livemed.records.cases import Case
from livemed.records.grading import Rubric


class Release(Record):
    """A named snapshot: the cases published by `until` (not retired), each with its rubric."""

    kind: ClassVar[str] = "release"

    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    until: date
    created_at: AwareDatetime = Field(default_factory=utcnow)
    release_hash: str = Field(min_length=64, max_length=64, description="sha256 over the manifest")
    manifest: dict[str, str] = Field(
        default_factory=dict, description="case id -> sha256 of the case and its rubric (canonical JSON)"
    )
    counts: dict[str, int] = Field(default_factory=dict, description="cases per source, and left out")
    status: str | None = Field(default=None, description="only cases with this status, when set")

    @property
    def id(self) -> str:
        return f"release:{self.name}"


class ReleaseItem(Record):
    """One case of a release, frozen with its rubric as they were when the release was made."""

    kind: ClassVar[str] = "release_item"

    release: str = Field(min_length=1)
    case: Case
    rubric: Rubric
    licence: str | None = Field(default=None, description="the source document's licence, if it gave one")
    content_hash: str = Field(min_length=64, max_length=64)

    @property
    def id(self) -> str:
        return f"release_item:{self.release}:{self.case.id}"

    @property
    def parent_id(self) -> str:
        return f"release:{self.release}"

    @property
    def published_at(self) -> AwareDatetime:
        return self.case.published


class Retirement(Record):
    """A case taken out of future releases, with the reason."""

    kind: ClassVar[str] = "retirement"

    case_id: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    retired_at: AwareDatetime = Field(default_factory=utcnow)

    @property
    def id(self) -> str:
        return f"retirement:{self.case_id}"

    @property
    def parent_id(self) -> str:
        return self.case_id
