"""The base of every record: provenance, a stable id, helpers for ids and times."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from livemed import __version__


def utcnow() -> datetime:
    return datetime.now(UTC)


def short_hash(*parts: str, length: int = 16) -> str:
    """A stable hex digest of some strings (for ids and prompt hashes)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:length]


class Provenance(BaseModel):
    """Who made a record, when, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    livemed_version: str = __version__
    created_at: AwareDatetime = Field(default_factory=utcnow)
    model_id: str | None = None
    prompt_hash: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


class Record(BaseModel):
    """Base of every stored record."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    kind: ClassVar[str] = "record"
    schema_version: int = 1
    provenance: Provenance = Field(default_factory=Provenance)

    @property
    def id(self) -> str:  # pragma: no cover - every concrete record overrides it
        raise NotImplementedError

    @property
    def parent_id(self) -> str | None:
        """The id of the record this one was derived from, if any (indexed in the store)."""
        return None

    @property
    def published_at(self) -> datetime | None:
        """The publication date behind this record, if any (indexed in the store)."""
        return None
