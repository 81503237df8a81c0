"""The curation funnel per source: documents, rejections by stage and reason, cases, scored cases."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

from livemed.records import Rejection


class FunnelRow(BaseModel):
    source: str
    documents: int
    rejected: dict[str, int] = Field(default_factory=dict, description="stage -> count")
    cases: int
    rubrics: int
    scored: int


class ReasonRow(BaseModel):
    source: str
    stage: str
    reason: str
    count: int


def source_of_doc_id(doc_id: str) -> str:
    """Doc ids are `source:source_id`."""
    return doc_id.split(":", 1)[0]


def funnel(
    doc_ids: Iterable[str],
    rejections: Iterable[Rejection],
    case_sources: Mapping[str, str],
    rubric_case_ids: Iterable[str],
    scored_case_ids: Iterable[str],
) -> tuple[list[FunnelRow], list[ReasonRow]]:
    """Counts per source; `case_sources` maps case id -> source. Rejections without a source are 'unknown'."""
    docs = Counter(source_of_doc_id(d) for d in doc_ids)
    stages: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: Counter[tuple[str, str, str]] = Counter()
    for rejection in rejections:
        source = rejection.source or _guess_source(rejection.record_id)
        stages[source][rejection.stage] += 1
        reasons[(source, rejection.stage, rejection.reason)] += 1
    cases = Counter(case_sources.values())
    rubrics = Counter(case_sources[c] for c in set(rubric_case_ids) if c in case_sources)
    scored = Counter(case_sources[c] for c in set(scored_case_ids) if c in case_sources)
    rows = [
        FunnelRow(
            source=source,
            documents=docs[source],
            rejected=dict(sorted(stages[source].items())),
            cases=cases[source],
            rubrics=rubrics[source],
            scored=scored[source],
        )
        for source in sorted(set(docs) | set(stages) | set(cases))
    ]
    reason_rows = [
        ReasonRow(source=s, stage=st, reason=r, count=n)
        for (s, st, r), n in sorted(reasons.items(), key=lambda item: (item[0][0], -item[1], item[0][1:]))
    ]
    return rows, reason_rows


def _guess_source(record_id: str) -> str:
    """A rejected doc's id is `source:source_id`; a case's is `case:source:source_id`."""
    parts = record_id.split(":")
    if parts[0] in ("case", "rubric", "answer") and len(parts) > 2:
        return parts[1]
    return parts[0] if len(parts) > 1 else "unknown"
