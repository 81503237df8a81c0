"""Harvested documents and the rejections every stage records."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, AwareDatetime, BaseModel, ConfigDict, Field

from livemed.records.base import Record, utcnow


class ReplyRole(StrEnum):
    PHYSICIAN = "physician"
    VERIFIED = "verified"
    ACCEPTED = "accepted"
    ASKER = "asker"
    OTHER = "other"


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: ReplyRole = ReplyRole.OTHER
    author: str | None = None
    text: str
    date: AwareDatetime | None = None
    url: str | None = None


class Doc(Record):
    """A harvested document: a case report or a question-and-answer thread."""

    kind: ClassVar[str] = "doc"

    source: str = Field(min_length=1, max_length=64)
    source_id: str = Field(min_length=1, max_length=512)
    url: str | None = None
    published: AwareDatetime = Field(validation_alias=AliasChoices("published", "published_at"))
    date_field: str = Field(
        default="published", description="which date of the source `published` was taken from"
    )
    harvested_at: AwareDatetime = Field(default_factory=utcnow)
    doc_type: Literal["case_report", "thread", "other"] = "other"
    title: str = ""
    text: str
    replies: list[Reply] = Field(default_factory=list)
    language: str | None = None
    licence: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.source}:{self.source_id}"

    @property
    def published_at(self) -> datetime:
        return self.published


def is_call_failure(reason: str) -> bool:
    """Whether a rejection reason is a failed call (`*_failed`) rather than a verdict on the item."""
    return reason.endswith("_failed")


class Rejection(Record):
    """A record a stage refused, with a reason code: per-item failures are data."""

    kind: ClassVar[str] = "rejection"

    stage: str = Field(min_length=1)
    reason: str = Field(min_length=1, description="a short machine-readable code, e.g. 'too_short'")
    detail: str = ""
    record_kind: str = Field(min_length=1)
    record_id: str = Field(min_length=1)
    source: str | None = None
    published: AwareDatetime | None = None

    @property
    def id(self) -> str:
        return f"{self.stage}:{self.record_id}"

    @property
    def call_failed(self) -> bool:
        """A model or search call failed (reason `*_failed`, or any rejection of an answer: `answer`
        rejects only when the candidate's call failed): not a verdict; the item is tried again."""
        return is_call_failure(self.reason) or self.stage == "answer"

    @property
    def parent_id(self) -> str:
        return self.record_id

    @property
    def published_at(self) -> datetime | None:
        return self.published
