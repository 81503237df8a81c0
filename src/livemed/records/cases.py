"""Curated cases: narrative LN, query Q, advice LA, and the Validator's and Controller's findings."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from livemed.records.base import Record


class Narrative(BaseModel):
    """The narrative entities LN of a case; each field is a list of atomic facts."""

    model_config = ConfigDict(extra="forbid")

    demographics: list[str] = Field(default_factory=list)
    chief_complaint: list[str] = Field(default_factory=list)
    symptoms: list[str] = Field(default_factory=list)
    onset_duration: list[str] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)
    family_history: list[str] = Field(default_factory=list)
    social_history: list[str] = Field(default_factory=list)
    medications: list[str] = Field(default_factory=list)
    allergies: list[str] = Field(default_factory=list)
    exam_labs: list[str] = Field(default_factory=list)
    timeline: list[str] = Field(default_factory=list)

    def entities(self) -> list[tuple[str, str]]:
        """Every (field, fact) pair, in field order."""
        return [(name, fact) for name in type(self).model_fields for fact in getattr(self, name)]

    def is_empty(self) -> bool:
        return not self.entities()


class EvidenceRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    snippet: str
    score: float = 0.0
    url: str | None = None


class AdviceCheck(BaseModel):
    """How one advice element fared against retrieved evidence."""

    model_config = ConfigDict(extra="forbid")

    advice_index: int = Field(ge=0)
    score: float = Field(description="1.0 supported, 0.5 partially supported, 0.0 unsupported")
    contradicted: bool = False  # the evidence states the opposite (0.0 too, but recorded apart)
    rationale: str = ""
    evidence: list[EvidenceRef] = Field(default_factory=list)

    @field_validator("score")
    @classmethod
    def _three_levels(cls, score: float) -> float:
        if score not in (0.0, 0.5, 1.0):
            raise ValueError(f"advice alignment must be 0.0, 0.5 or 1.0, got {score}")
        return score


class Validation(BaseModel):
    """The Validator's scores."""

    model_config = ConfigDict(extra="forbid")

    s_cc: bool
    s_inf: float = Field(ge=0.0, le=1.0)
    s_align: float = Field(ge=0.0, le=1.0)
    query_type: str | None = None
    query_rationale: str = ""  # the Validator's reason, written before its query type and s_cc
    missing_items: list[str] = Field(default_factory=list)
    advice_checks: list[AdviceCheck] = Field(default_factory=list)


class GroundedSpan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    element: str
    field: str
    source_span: str | None = None
    start: int | None = None
    end: int | None = None
    score: float = Field(ge=0.0, le=100.0)


class GroundingAudit(BaseModel):
    """The Controller's audit: every element must be traceable to the source text."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    method: str = "fuzzy"
    spans: list[GroundedSpan] = Field(default_factory=list)
    ungrounded: list[str] = Field(default_factory=list)


class Case(Record):
    """A curated benchmark case: narrative LN, query Q and advice LA, dated by its source."""

    kind: ClassVar[str] = "case"

    doc_id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    source_id: str = Field(min_length=1)
    url: str | None = None
    published: AwareDatetime
    narrative: Narrative
    query: str = Field(min_length=1)
    query_derived: bool = False
    advice: list[str] = Field(min_length=1)
    validation: Validation | None = None
    grounding: GroundingAudit | None = None
    specialties: list[str] = Field(default_factory=list)
    language: str | None = None
    status: Literal["draft", "validated", "accepted"] = "draft"
    messages: list[dict[str, str]] = Field(
        default_factory=list, description="the original conversation, for imported cases (e.g. HealthBench)"
    )
    date_field: str = Field(
        default="published", description="where `published` came from (e.g. 'option', 'file_mtime')"
    )
    findings: list[str] = Field(
        default_factory=list,
        description="what curation noted on the way, e.g. instruction-like sentences it dropped",
    )

    @field_validator("advice")
    @classmethod
    def _advice_not_blank(cls, advice: list[str]) -> list[str]:
        if any(not item.strip() for item in advice):
            raise ValueError("advice elements must not be blank")
        return advice

    @property
    def id(self) -> str:
        return f"case:{self.doc_id}"

    @property
    def parent_id(self) -> str:
        return self.doc_id

    @property
    def published_at(self) -> datetime:
        return self.published
