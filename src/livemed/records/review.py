"""Records of clinician review: reviewers, the audit sample, labels, and reviewed rubric versions.

- `Reviewer`: a name and the SHA-256 of its token (the token itself is printed once, never stored).
- `AuditSample`: graded criteria drawn at random for one grader, stratified by axis and grader verdict,
  with each stratum's population and sample size, so every item's inclusion probability is known and
  a correction from its labels is unbiased (`score/corrected.py`).
- `Label`: one reviewer's verdict on one item of a queue; a reviewer's later label on the same item
  replaces it (same id), two reviewers' labels never collide (the id names the reviewer).
- `RubricVersion`: a rubric as a reviewer left it (criteria edited, struck or approved); version 0 is
  the writer's `Rubric`, which is never changed, so scores on it stay reproducible.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from livemed.records.base import Record, utcnow
from livemed.records.grading import Axis, Criterion

Queue = Literal["audit", "failures", "criteria", "cases"]
QUEUES: tuple[Queue, ...] = ("audit", "failures", "criteria", "cases")

# the verdicts each queue takes (keys 1/2/3 in the app, in this order)
VERDICTS: dict[str, tuple[str, ...]] = {
    "audit": ("met", "not met", "unsure"),
    "failures": ("met", "not met", "unusable"),
    "criteria": ("approve", "edit", "strike"),
    "cases": ("confirm", "overturn"),
}


class Reviewer(Record):
    kind: ClassVar[str] = "reviewer"

    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")
    token_sha256: str = Field(min_length=64, max_length=64)
    created: AwareDatetime = Field(default_factory=utcnow)
    revoked: bool = False

    @property
    def id(self) -> str:
        return f"reviewer:{self.name}"


class Stratum(BaseModel):
    """One cell of the audit design: the grader's items on one axis with one verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    axis: Axis
    met: bool
    population: int = Field(ge=0, description="graded items in this cell")
    drawn: int = Field(ge=0, description="items of this cell in the sample")

    @property
    def key(self) -> str:
        return stratum_key(self.axis, self.met)

    @property
    def inclusion(self) -> float:
        """The probability that an item of this cell is in the sample."""
        return self.drawn / self.population if self.population else 0.0


def stratum_key(axis: str, met: bool) -> str:
    return f"{axis}:{'met' if met else 'not met'}"


class AuditItem(BaseModel):
    """A graded criterion in the audit sample: which grade, and the cell it was drawn from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grade_id: str = Field(min_length=1)
    answer_id: str = Field(min_length=1)
    case_id: str = Field(min_length=1)
    criterion_id: str = Field(min_length=1)
    model: str = Field(min_length=1)
    stratum: str = Field(min_length=1)
    double: bool = Field(default=False, description="to be labelled by two reviewers")


class AuditSample(Record):
    """A seeded, stratified random sample of one grader's verdicts, for blind review."""

    kind: ClassVar[str] = "audit_sample"

    judge: str = Field(min_length=1)
    seed: int
    strata: list[Stratum]
    items: list[AuditItem]
    double_share: float = Field(ge=0.0, le=1.0)
    drawn_at: AwareDatetime = Field(default_factory=utcnow)

    @property
    def id(self) -> str:
        return f"audit_sample:{self.judge}"


class Label(Record):
    """One reviewer's verdict on one queue item, with an optional note (and new text for an edit)."""

    kind: ClassVar[str] = "label"

    reviewer: str = Field(min_length=1)
    queue: Queue
    item_id: str = Field(
        min_length=1, description="a grade id, a grade failure id, `case#criterion`, a case id"
    )
    verdict: str = Field(min_length=1)
    note: str = ""
    labelled_at: AwareDatetime = Field(default_factory=utcnow)
    source: str = Field(default="app", description="'app', or the file it was imported from")

    @property
    def id(self) -> str:
        return f"label:{self.queue}:{self.item_id}:{self.reviewer}"

    @property
    def parent_id(self) -> str:
        return self.item_id

    @property
    def time(self) -> datetime:
        return self.labelled_at


class CriterionChange(BaseModel):
    """What a reviewer did to one criterion of a rubric."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["approve", "edit", "strike", "undo"]
    criterion_id: str = Field(min_length=1, description="the id of the criterion acted on")
    new: Criterion | None = Field(default=None, description="the criterion after an edit (or an undo)")


class RubricVersion(Record):
    """A reviewed rubric: version n+1 is version n with one reviewer's change applied."""

    kind: ClassVar[str] = "rubric_version"

    case_id: str = Field(min_length=1)
    version: int = Field(ge=1)
    criteria: list[Criterion] = Field(min_length=1)
    reviewer: str = Field(min_length=1)
    change: CriterionChange
    approved: list[str] = Field(default_factory=list, description="ids of criteria a reviewer approved")
    made_at: AwareDatetime = Field(default_factory=utcnow)

    @property
    def id(self) -> str:
        return f"rubric_version:{self.case_id}:{self.version:05d}"

    @property
    def parent_id(self) -> str:
        return self.case_id
