"""The vocabulary of livemed: the typed records that flow between stages.

Every record is a pydantic v2 model with a `schema_version`, a `provenance` block and a stable `id`
derived from its content keys, so the store can upsert it idempotently. `RECORD_TYPES` maps each
record's `kind` to its class; the store and the JSONL import use it.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

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


# --------------------------------------------------------------------------- harvest


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

    source: str = Field(min_length=1)
    source_id: str = Field(min_length=1)
    url: str | None = None
    published: AwareDatetime
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
    def parent_id(self) -> str:
        return self.record_id

    @property
    def published_at(self) -> datetime | None:
        return self.published


# --------------------------------------------------------------------------- curation


class Narrative(BaseModel):
    """The narrative entities LN of a case; each field is a list of atomic facts."""

    model_config = ConfigDict(extra="forbid")

    demographics: list[str] = Field(default_factory=list)
    chief_complaint: list[str] = Field(default_factory=list)
    symptoms: list[str] = Field(default_factory=list)
    onset_duration: list[str] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)
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


# --------------------------------------------------------------------------- rubrics

AXES = ("accuracy", "completeness", "communication", "context_awareness", "safety")
Axis = Literal["accuracy", "completeness", "communication", "context_awareness", "safety"]


class Criterion(BaseModel):
    """One bipolar rubric criterion; the sign of its weight matches its polarity."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    polarity: Literal["positive", "negative"]
    axis: Axis
    weight: int = Field(ge=-10, le=10)
    theme: str | None = None
    source_fact: str | None = Field(default=None, description="the advice element it came from")
    points: float | None = Field(
        default=None, description="original points of an imported criterion (HealthBench); scores use them"
    )
    tags: list[str] = Field(default_factory=list, description="original tags (e.g. 'axis:…', 'level:…')")

    @property
    def value(self) -> float:
        """The weight scores use: the original points when imported, else the integer weight."""
        return self.points if self.points is not None else float(self.weight)

    @model_validator(mode="after")
    def _sign_matches_polarity(self) -> Criterion:
        if self.weight == 0:
            raise ValueError(f"weight must not be 0 (criterion {self.text!r})")
        if (self.weight > 0) != (self.polarity == "positive"):
            raise ValueError(
                f"weight {self.weight} does not match polarity {self.polarity!r} (criterion {self.text!r})"
            )
        return self

    @property
    def id(self) -> str:
        return short_hash(self.text, self.axis, str(self.weight), length=12)


class Rubric(Record):
    kind: ClassVar[str] = "rubric"

    case_id: str = Field(min_length=1)
    criteria: list[Criterion] = Field(min_length=1)
    themes: list[str] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list, description="lint findings, kept for the record")
    steps: list[dict[str, Any]] = Field(
        default_factory=list, description="what each writer step produced (step, prompt hash, output)"
    )
    published: AwareDatetime | None = None

    @property
    def id(self) -> str:
        return f"rubric:{self.case_id}"

    @property
    def parent_id(self) -> str:
        return self.case_id

    @property
    def published_at(self) -> datetime | None:
        return self.published


# --------------------------------------------------------------------------- answers and grades


class Answer(Record):
    """A candidate model's answer to a case (successful calls only: failures are Rejections)."""

    kind: ClassVar[str] = "answer"

    case_id: str = Field(min_length=1)
    model: str = Field(min_length=1)
    sample: int = Field(default=0, ge=0)
    text: str
    finish_reason: str | None = None
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)

    @property
    def id(self) -> str:
        return f"answer:{self.case_id}:{self.model}:{self.sample}"

    @property
    def parent_id(self) -> str:
        return self.case_id


class Grade(Record):
    """A judge's verdict on one criterion for one answer."""

    kind: ClassVar[str] = "grade"

    answer_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    criterion_id: str = Field(min_length=1)
    judge: str = Field(min_length=1)
    met: bool
    explanation: str = ""
    raw: str = ""

    @property
    def id(self) -> str:
        return f"grade:{self.answer_id}:{self.criterion_id}:{self.judge}"

    @property
    def parent_id(self) -> str:
        return self.answer_id


class GradeFailure(Record):
    """A verdict that could not be obtained or parsed; counted, and not met for either polarity."""

    kind: ClassVar[str] = "grade_failure"

    answer_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    criterion_id: str = Field(min_length=1)
    judge: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    raw: str = ""
    detail: str = ""

    @property
    def id(self) -> str:
        return f"grade:{self.answer_id}:{self.criterion_id}:{self.judge}"

    @property
    def parent_id(self) -> str:
        return self.answer_id


class Score(Record):
    """An answer's rubric score, overall and per axis and theme."""

    kind: ClassVar[str] = "score"

    answer_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    model: str = Field(min_length=1)
    judge: str = Field(min_length=1)
    convention: Literal["livemed", "healthbench"] = "livemed"
    score: float
    per_axis: dict[str, float] = Field(default_factory=dict)
    per_theme: dict[str, float] = Field(default_factory=dict)
    coverage: float = Field(ge=0.0, le=1.0)
    harm: float = Field(ge=0.0)
    failures: int = Field(default=0, ge=0)
    failure_policy: Literal["not-met", "exclude"] = "not-met"
    published: AwareDatetime | None = None

    @property
    def id(self) -> str:
        return f"score:{self.answer_id}:{self.judge}:{self.convention}"

    @property
    def parent_id(self) -> str:
        return self.answer_id

    @property
    def published_at(self) -> datetime | None:
        return self.published


# --------------------------------------------------------------------------- runs


class Usage(BaseModel):
    """Calls, tokens and cost for one model (or one model in one stage)."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})


class Run(Record):
    """One invocation of a livemed command: what it did, with what, at what cost."""

    kind: ClassVar[str] = "run"

    run_id: str = Field(min_length=1)
    command: str = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)
    models: list[str] = Field(default_factory=list)
    usage: dict[str, Usage] = Field(default_factory=dict, description="totals keyed by model id")
    stage_usage: dict[str, dict[str, Usage]] = Field(
        default_factory=dict, description="stage -> model -> usage"
    )
    started_at: AwareDatetime = Field(default_factory=utcnow)
    ended_at: AwareDatetime | None = None
    outcome: Literal["running", "ok", "failed", "interrupted"] = "running"
    error: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"run:{self.run_id}"

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd for u in self.usage.values())


# --------------------------------------------------------------------------- analysis


class ErrorLabel(Record):
    """The root cause of a low-scoring answer, assigned by the error-taxonomy classifier."""

    kind: ClassVar[str] = "error_label"

    answer_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    model: str = Field(min_length=1)
    classifier: str = Field(min_length=1, description="a model id, or 'offline/heuristic'")
    method: Literal["llm", "heuristic"] = "llm"
    category: Literal["CNIF", "GOPR", "MHME", "KGOC"]
    rationale: str = ""
    score: float | None = None

    @property
    def id(self) -> str:
        return f"error_label:{self.answer_id}:{self.classifier}"

    @property
    def parent_id(self) -> str:
        return self.answer_id


RECORD_TYPES: dict[str, type[Record]] = {
    cls.kind: cls
    for cls in (Doc, Rejection, Case, Rubric, Answer, Grade, GradeFailure, Score, Run, ErrorLabel)
}


def record_type(kind: str) -> type[Record]:
    """The record class for a kind, with a helpful error on a miss."""
    from livemed.errors import UnknownNameError

    try:
        return RECORD_TYPES[kind]
    except KeyError:
        raise UnknownNameError("record kind", kind, RECORD_TYPES) from None
