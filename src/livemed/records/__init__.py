"""The vocabulary of livemed: the typed records that flow between stages.

Every record is a pydantic v2 model with a `schema_version`, a `provenance` block and a stable `id`
derived from its content keys, so the store can upsert it idempotently. `RECORD_TYPES` maps each
record's `kind` to its class; the store and the JSONL import use it.
"""

from __future__ import annotations

from typing_extensions import TypeIs

from livemed.records.base import Provenance, Record, short_hash, utcnow
from livemed.records.cases import (
    AdviceCheck,
    Case,
    EvidenceRef,
    GroundedSpan,
    GroundingAudit,
    Narrative,
    Validation,
    ViewKind,
)
from livemed.records.grading import (
    AXES,
    CALL_FAILED,
    Answer,
    Axis,
    Criterion,
    ErrorLabel,
    FactCoverage,
    Grade,
    GradeFailure,
    Rubric,
    Score,
)
from livemed.records.harvest import Doc, Rejection, Reply, ReplyRole, is_call_failure
from livemed.records.judging import Candidate, JudgeVerdict, Pair, ValidityCard
from livemed.records.releases import Release, ReleaseItem, Retirement
from livemed.records.review import AuditSample, Label, Reviewer, RubricVersion
from livemed.records.runs import Run, Usage

RECORD_TYPES: dict[str, type[Record]] = {
    cls.kind: cls
    for cls in (
        *(Doc, Rejection, Case, Rubric, Answer, Grade, GradeFailure, Score, Run, ErrorLabel),
        *(Release, ReleaseItem, Retirement),
        *(Pair, JudgeVerdict, ValidityCard),
        *(Reviewer, AuditSample, Label, RubricVersion),
    )
}


def is_failed_call(record: Record) -> bool:
    """Whether `record` stands for a call that failed (a retried Rejection, a `call_failed` GradeFailure)
    rather than a result: the item it belongs to is not done, and the command that wrote it fails."""
    return isinstance(record, Rejection | GradeFailure) and record.call_failed


def is_unusable_verdict(record: Record) -> TypeIs[GradeFailure]:
    """Whether `record` is a verdict the grader gave but that cannot be used (unparsable, missing from a
    batch, ambiguous): the answer is not graded under the default policy, and the command fails."""
    return isinstance(record, GradeFailure) and not record.call_failed


def record_type(kind: str) -> type[Record]:
    """The record class for a kind, with a helpful error on a miss."""
    from livemed.errors import UnknownNameError

    try:
        return RECORD_TYPES[kind]
    except KeyError:
        raise UnknownNameError("record kind", kind, RECORD_TYPES) from None


__all__ = [
    "AXES",
    "CALL_FAILED",
    "RECORD_TYPES",
    "AdviceCheck",
    "Answer",
    "AuditSample",
    "Axis",
    "Candidate",
    "Case",
    "Criterion",
    "Doc",
    "ErrorLabel",
    "EvidenceRef",
    "FactCoverage",
    "Grade",
    "GradeFailure",
    "GroundedSpan",
    "GroundingAudit",
    "JudgeVerdict",
    "Label",
    "Narrative",
    "Pair",
    "Provenance",
    "Record",
    "Rejection",
    "Release",
    "ReleaseItem",
    "Reply",
    "ReplyRole",
    "Retirement",
    "Reviewer",
    "Rubric",
    "RubricVersion",
    "Run",
    "Score",
    "Usage",
    "Validation",
    "ValidityCard",
    "ViewKind",
    "is_call_failure",
    "is_failed_call",
    "is_unusable_verdict",
    "record_type",
    "short_hash",
    "utcnow",
]
