"""Curated cases: narrative LN, query Q, advice LA, and the Validator's and Controller's findings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from livemed.records.base import Record

ViewKind = Literal["narrative", "post"]  # what the candidate reads of a case (curate/view.py)


class Narrative(BaseModel):
    """The narrative entities LN of a case; each slot is a list of atomic facts.

    The slots are the domain pack's (`[narrative]` of its pack.toml). The medical pack's are declared
    here, so stored cases load as they always did; another pack's slots (the legal pack's `parties`,
    `jurisdiction`, …) are kept as extra fields, lists of strings too, checked against the pack when a
    case is curated (`DomainPack.narrative_model`). Read a slot through `slot`, never `getattr`.
    """

    model_config = ConfigDict(extra="allow")

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

    @model_validator(mode="after")
    def _extra_slots_are_facts(self) -> Narrative:
        for name, value in (self.model_extra or {}).items():
            if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                raise ValueError(f"narrative slot {name!r} must be a list of strings")
        return self

    def slot_names(self) -> list[str]:
        """The slots this narrative has: the declared (medical) ones, then a pack's own."""
        return [*type(self).model_fields, *(self.model_extra or {})]

    def slot(self, name: str) -> list[str]:
        """The facts of one slot ([] when the narrative has no such slot)."""
        value = (
            getattr(self, name, None)
            if name in type(self).model_fields
            else (self.model_extra or {}).get(name)
        )
        return list(value or [])

    def by_slot(self, slots: Sequence[str]) -> dict[str, list[str]]:
        """The facts of the given slots (a domain pack's `narrative_slots`), in that order."""
        return {name: self.slot(name) for name in slots}

    def entities(self) -> list[tuple[str, str]]:
        """Every (slot, fact) pair, in slot order."""
        return [(name, fact) for name in self.slot_names() for fact in self.slot(name)]

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
    # (both left out of the stored payload at their defaults: a case curated before they existed, or one
    # shown its narrative, is stored byte for byte as before)
    view: ViewKind = Field(
        default="narrative",
        description="what the candidate reads (`curate.view.candidate_view`): the narrative slots and "
        "the query, or the asker's own title and post (`post`), verbatim",
        exclude_if=lambda kind: kind == "narrative",
    )
    post: str | None = Field(
        default=None,
        description="the asker's title and post, shown when view is 'post'",
        exclude_if=lambda post: post is None,
    )

    @field_validator("advice")
    @classmethod
    def _advice_not_blank(cls, advice: list[str]) -> list[str]:
        if any(not item.strip() for item in advice):
            raise ValueError("advice elements must not be blank")
        return advice

    @model_validator(mode="after")
    def _post_view_has_its_text(self) -> Case:
        if self.view == "post" and not (self.post or "").strip():
            raise ValueError("a case whose view is 'post' needs the post it shows")
        return self

    @property
    def id(self) -> str:
        return f"case:{self.doc_id}"

    @property
    def parent_id(self) -> str:
        return self.doc_id

    @property
    def published_at(self) -> datetime:
        return self.published
