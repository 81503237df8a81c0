"""Rubrics of bipolar criteria, answers, grades, scores and error labels."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from livemed.records.base import Record, short_hash

CALL_FAILED = "call_failed"  # a GradeFailure whose grader call failed: no verdict, graded again next run
AXES = ("accuracy", "completeness", "communication", "context_awareness", "safety")
Axis = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]  # the domain pack names them
RubricChoice = Literal["writer", "latest-approved"]  # which rubric of a case a grade or score run uses
RUBRIC_CHOICES: tuple[RubricChoice, ...] = ("writer", "latest-approved")
REVIEWED_SUFFIX = ":reviewed"  # a latest-approved score's id ends with it, beside the writer-rubric score


_KEEP_S = ("ss", "is", "us")  # diagnosis, fitness, status: not plurals


@functools.lru_cache(maxsize=4096)  # a pure function of a short string, asked for every criterion
def canonical_theme(name: str) -> str:
    """One spelling per theme: lower case, words split on `_` and spaces, the last word singular
    ("emergency_referrals" and "Emergency referral" are both "emergency referral")."""
    words = name.replace("_", " ").lower().split()
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith(_KEEP_S):
        words[-1] = words[-1][:-1]
    return " ".join(words)


def canonical_themes(names: list[str]) -> list[str]:
    """A rubric's themes as it keeps them: each in its one spelling, once, blank ones dropped."""
    return list(dict.fromkeys(t for t in map(canonical_theme, names) if t))


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

    @field_validator("theme")
    @classmethod
    def _one_theme_spelling(cls, value: str | None) -> str | None:
        return canonical_theme(value) or None if value is not None else None

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
        return criterion_key_id(self.text, self.axis, self.weight)


@functools.lru_cache(maxsize=1 << 16)
def criterion_key_id(text: str, axis: str, weight: int) -> str:
    """The id of the criterion with this text, axis and weight (`Criterion.id`), hashed once per key
    however many answers are graded or scored on it; also for views that read only these fields."""
    return short_hash(text, axis, str(weight), length=12)


class FactCoverage(BaseModel):
    """A rubric's fact-coverage audit (`rubrics/coverage.py`): its criteria, how many name facts about
    the patient (all of which the candidate's view states), and how many were dropped for resting on a
    fact it does not state."""

    model_config = ConfigDict(extra="forbid")

    criteria: int = Field(ge=0)
    with_context: int = Field(ge=0)
    dropped: int = Field(default=0, ge=0)


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
    fact_coverage: FactCoverage | None = Field(
        default=None,
        description="None: written before the audit, or imported (left out of the stored payload then)",
        exclude_if=lambda audit: audit is None,
    )

    @field_validator("themes")
    @classmethod
    def _one_spelling_each(cls, value: list[str]) -> list[str]:
        return canonical_themes(value)

    def repeated_criterion(self) -> Criterion | None:
        """A criterion whose id another one shares (it would be graded once and counted twice), if any.

        Checked where rubrics are made (the writer drops near-duplicates, the importers refuse them), not
        when a stored rubric is read back, so a store written before the check still opens.
        """
        seen: set[str] = set()
        for criterion in self.criteria:
            if (key := criterion.id) in seen:
                return criterion
            seen.add(key)
        return None

    @property
    def id(self) -> str:
        return f"rubric:{self.case_id}"

    @property
    def parent_id(self) -> str:
        return self.case_id

    @property
    def published_at(self) -> datetime | None:
        return self.published


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
    """A verdict that could not be obtained (`call_failed`) or used (unparsable, missing, ambiguous): the
    answer is not graded while it stands (unless a score's failure policy counts it; `score.formula`)."""

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

    @property
    def call_failed(self) -> bool:
        """The grader's call itself failed (no verdict was given): the answer is not yet graded."""
        return self.reason == CALL_FAILED


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
    per_tag: dict[str, float] = Field(
        default_factory=dict,
        description="healthbench convention: simple-evals' score per rubric and example tag",
    )
    coverage: float = Field(ge=0.0, le=1.0)
    harm: float = Field(ge=0.0)
    failures: int = Field(default=0, ge=0)
    failure_policy: Literal["strict", "not-met", "exclude"] = "strict"
    published: AwareDatetime | None = None
    rubric_version: RubricChoice = Field(
        default="writer",
        description="the rubric scored: the writer's, or each case's newest reviewed version "
        "(left out of the stored payload for the writer's, so older stores re-serialise as they were)",
        exclude_if=lambda choice: choice == "writer",
    )

    @property
    def id(self) -> str:
        # the default policy keeps the original id; `not-met` and `exclude` scores sit beside them,
        # and scores on the reviewed rubrics beside the writer-rubric ones
        policy = "" if self.failure_policy == "strict" else f":{self.failure_policy}"
        reviewed = REVIEWED_SUFFIX if self.rubric_version == "latest-approved" else ""
        return f"score:{self.answer_id}:{self.judge}:{self.convention}{policy}{reviewed}"

    @property
    def parent_id(self) -> str:
        return self.answer_id

    @property
    def published_at(self) -> datetime | None:
        return self.published


class ErrorLabel(Record):
    """The root cause of a low-scoring answer, assigned by the error-taxonomy classifier."""

    kind: ClassVar[str] = "error_label"

    answer_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    model: str = Field(min_length=1)
    classifier: str = Field(min_length=1, description="a model id, or 'offline/heuristic'")
    method: Literal["llm", "heuristic"] = "llm"
    category: Literal["CNIF", "GOPR", "MHME", "KGOC", "NCE"]  # NCE: no clinical error (reported apart)
    rationale: str = ""
    score: float | None = None

    @property
    def id(self) -> str:
        return f"error_label:{self.answer_id}:{self.classifier}"

    @property
    def parent_id(self) -> str:
        return self.answer_id
