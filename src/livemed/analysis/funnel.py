"""The curation funnel per source: harvested, rejections by stage and reason, documents, cases, scored."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

from livemed.records import Rejection, Score
from livemed.store import Store

BEFORE_CURATION = ("harvest", "prefilter")  # a document rejected here is never stored as a Doc
CURATION = ("screener", "validator", "controller")
STAGE_ORDER = (*BEFORE_CURATION, *CURATION, "rubrics", "answer", "taxonomy")


class FunnelRow(BaseModel):
    """One source's funnel; it adds up: harvested − rejected before curation = documents, and
    documents − rejected in curation − uncurated = cases (for harvested sources; imported cases have
    no documents)."""

    source: str
    harvested: int = Field(
        description="documents harvested: stored ones and those rejected at harvest or pre-filter"
    )
    rejected: dict[str, int] = Field(default_factory=dict, description="stage -> count, in pipeline order")
    documents: int = Field(description="documents stored after the pre-filter: the input of curation")
    uncurated: int = Field(
        default=0, description="stored documents with neither a case nor a curation verdict yet"
    )
    failed: int = Field(
        default=0, description="call failures (`*_failed`) at any stage, tried again on the next run"
    )
    cases: int
    rubrics: int
    scored: int

    def rejected_before(self) -> dict[str, int]:
        """Rejections at harvest and by the pre-filter (before curation), by stage."""
        return {s: n for s, n in self.rejected.items() if s in BEFORE_CURATION}

    def rejected_in_curation(self) -> dict[str, int]:
        """Rejections by the Screener, Validator and Controller, by stage."""
        return {s: n for s, n in self.rejected.items() if s in CURATION}

    def rejected_later(self) -> dict[str, int]:
        """Rejections after curation (rubrics, answers, classifier), by stage."""
        return {s: n for s, n in self.rejected.items() if s not in BEFORE_CURATION and s not in CURATION}


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
    """Counts per source; `case_sources` maps case id -> source. Rejections without a source are 'unknown'.

    The funnel starts from what was harvested: the stored documents together with the documents
    rejected at harvest or by the pre-filter (those are never stored as documents).
    """
    stored = set(doc_ids)
    early: set[str] = set()
    curated = {case_id.removeprefix("case:") for case_id in case_sources}
    stages: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: Counter[tuple[str, str, str]] = Counter()
    failed: Counter[str] = Counter()
    for rejection in rejections:
        source = rejection.source or _guess_source(rejection.record_id)
        reasons[(source, rejection.stage, rejection.reason)] += 1
        if rejection.call_failed:  # not a verdict: the item is tried again on the next run
            failed[source] += 1
            continue
        stages[source][rejection.stage] += 1
        if rejection.stage in BEFORE_CURATION:
            early.add(rejection.record_id)
        elif rejection.stage in CURATION:
            curated.add(rejection.record_id)
    harvested = Counter(source_of_doc_id(d) for d in stored | early)
    documents = Counter(source_of_doc_id(d) for d in stored - early)
    uncurated = Counter(source_of_doc_id(d) for d in stored - early - curated)
    cases = Counter(case_sources.values())
    rubrics = Counter(case_sources[c] for c in set(rubric_case_ids) if c in case_sources)
    scored = Counter(case_sources[c] for c in set(scored_case_ids) if c in case_sources)
    rows = [
        FunnelRow(
            source=source,
            harvested=harvested[source],
            rejected=dict(sorted(stages[source].items(), key=lambda item: _stage_rank(item[0]))),
            documents=documents[source],
            uncurated=uncurated[source],
            failed=failed[source],
            cases=cases[source],
            rubrics=rubrics[source],
            scored=scored[source],
        )
        for source in sorted(set(harvested) | set(stages) | set(cases) | set(failed))
    ]
    reason_rows = [
        ReasonRow(source=s, stage=st, reason=r, count=n)
        for (s, st, r), n in sorted(reasons.items(), key=lambda item: (item[0][0], -item[1], item[0][1:]))
    ]
    return rows, reason_rows


class _Source(TypedDict):
    source: str


class _CaseOf(TypedDict):
    case_id: str


_SOURCE, _CASE_OF = TypeAdapter(_Source), TypeAdapter(_CaseOf)


def store_funnel(
    store: Store, scored_case_ids: Iterable[str] | None = None
) -> tuple[list[FunnelRow], list[ReasonRow]]:
    """The funnel of everything in the store; `scored` counts cases with any score unless given."""
    scored = scored_case_ids if scored_case_ids is not None else (s.case_id for s in store.iter(Score))
    return funnel(
        store.ids("doc"),
        store.iter(Rejection),
        {case_id: view["source"] for case_id, view in store.fields("case", _SOURCE)},
        (view["case_id"] for _, view in store.fields("rubric", _CASE_OF)),
        scored,
    )


def _stage_rank(stage: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(stage), "") if stage in STAGE_ORDER else (len(STAGE_ORDER), stage)


def _guess_source(record_id: str) -> str:
    """A rejected doc's id is `source:source_id`; a case's is `case:source:source_id`, and a rubric's
    or answer's id starts with its case's (`rubric:case:source:…`, `answer:case:source:…`)."""
    parts = record_id.split(":")
    while parts[0] in ("case", "rubric", "answer") and len(parts) > 2:
        parts = parts[1:]
    return parts[0] if len(parts) > 1 else "unknown"
