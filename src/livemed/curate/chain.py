"""The curation chain, Screener → Validator → Controller (grounding, then the leak audit
`curate/leak.py`), and its incremental run over the store.

`curate(doc, …)` returns the accepted `Case` or the first stage's `Rejection` (id `<stage>:<doc id>`).
`curate_store` runs it on every stored document that the prefilter kept and that has no outcome yet,
through `run_stage`, so a run can be interrupted and resumed; `Funnel` counts what each stage took
in, rejected (by reason) and passed on, per source. A call failure (reason `*_failed`: the model or
the evidence search failed) is not an outcome: the document is tried again on the next run, and the
failure is deleted once it gets a real outcome. `redo=True` re-curates documents already curated
(e.g. after switching from the baseline to an LLM), replacing their old outcome; a case that is
gone or whose content changed also loses what was built on it (rubric, answers, grades, scores,
error labels), which the next `livemed rubrics` / `answer` / `grade` rebuild for the new case.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from livemed.config import Thresholds
from livemed.curate import leak
from livemed.curate.controller import Controller
from livemed.curate.screener import Screener
from livemed.curate.validator import Validator
from livemed.evidence import Retriever
from livemed.pipeline.runner import RunOptions, StageResult, batched, run_stage
from livemed.records import (
    Answer,
    Case,
    Doc,
    ErrorLabel,
    Grade,
    GradeFailure,
    Provenance,
    Record,
    Rejection,
    Rubric,
    Score,
    is_call_failure,
    short_hash,
)
from livemed.store import Store

STAGES = ("screener", "validator", "controller")


async def curate(
    doc: Doc,
    *,
    screener: Screener,
    validator: Validator,
    controller: Controller,
    retriever: Retriever,
    thresholds: Thresholds,
) -> Case | Rejection:
    """One document through the three agents, in sequence; the first rejection ends it."""
    draft = await screener.screen(doc)
    if isinstance(draft, Rejection):
        return draft
    validated = await validator.validate(draft, doc, retriever=retriever, thresholds=thresholds)
    if isinstance(validated, Rejection):
        return validated
    audited = await controller.audit(validated, doc)
    if isinstance(audited, Rejection):
        return audited
    accepted = leak.check(audited, doc, thresholds.answer_leak, screener.pack)
    if isinstance(accepted, Rejection):
        return accepted
    settings: dict[str, Any] = {
        "temperature": 0,
        "thresholds": thresholds.model_dump(),
        "retriever": retriever.name,
        "controller_llm": controller.llm is not None,
    }
    prompt_hash = short_hash(screener.prompt, validator.prompt, controller.prompt)
    provenance = Provenance(model_id=screener.llm.id, prompt_hash=prompt_hash, settings=settings)
    return accepted.model_copy(update={"provenance": provenance})


@dataclass
class Chain:
    """The three agents with their retriever and thresholds, callable on one document."""

    screener: Screener
    validator: Validator
    controller: Controller
    retriever: Retriever
    thresholds: Thresholds = field(default_factory=Thresholds)

    async def __call__(self, doc: Doc) -> Case | Rejection:
        return await curate(
            doc,
            screener=self.screener,
            validator=self.validator,
            controller=self.controller,
            retriever=self.retriever,
            thresholds=self.thresholds,
        )


def output_ids(doc: Doc) -> list[str]:
    """The ids a finished document leaves behind: its case, or a rejection by one of the stages."""
    return [f"case:{doc.id}", *(f"{stage}:{doc.id}" for stage in STAGES)]


retryable = is_call_failure  # a call failure (model or evidence search), not a verdict on the document


def pending_docs(
    store: Store, *, limit: int | None = None, batch_size: int = 500, redo: bool = False
) -> Iterator[Doc]:
    """Stored documents kept by the prefilter and not curated yet (or every kept one with `redo`).

    A document whose only outcome is a call failure (`*_failed`) is still pending.
    """

    def candidates() -> Iterator[Doc]:
        for batch in batched(store.iter(Doc), batch_size):
            prefiltered = store.has("rejection", [f"prefilter:{d.id}" for d in batch])
            kept = [d for d in batch if f"prefilter:{d.id}" not in prefiltered]
            done = set() if redo else _finished(store, [i for d in kept for i in output_ids(d)])
            yield from (doc for doc in kept if done.isdisjoint(output_ids(doc)))

    return islice(candidates(), limit)


def _finished(store: Store, ids: list[str]) -> set[str]:
    """The ids among `ids` that are real outcomes: cases and rejections other than call failures."""
    rejected = store.has("rejection", ids)
    failed = {i for i in rejected if (r := store.get(Rejection, i)) is not None and retryable(r.reason)}
    return store.has("case", ids) | (rejected - failed)


def _drop_stale(store: Store, doc: Doc, produced: Sequence[Case | Rejection]) -> None:
    """Deletes the document's earlier outcomes (a call failure, or the old outcome on redo).

    A new call failure deletes nothing: an earlier real outcome stays until a retry succeeds.
    """
    if any(isinstance(r, Rejection) and retryable(r.reason) for r in produced):
        return
    stale = sorted(set(output_ids(doc)) - {record.id for record in produced})
    for kind in ("case", "rejection"):
        if found := store.has(kind, stale):
            store.delete(kind, sorted(found))


def _outdated_by(old: Case, outcome: Case | Rejection) -> bool:
    """Whether rubrics and answers made for `old` no longer fit once `outcome` replaces it.

    A call failure leaves the old case in place; a real rejection removes it; a new case keeps them
    only when its narrative, query and advice are unchanged.
    """
    if isinstance(outcome, Rejection):
        return not retryable(outcome.reason)
    return (old.narrative, old.query, old.advice) != (outcome.narrative, outcome.query, outcome.advice)


def drop_case_outputs(store: Store, case_id: str) -> int:
    """Delete everything derived from a case: its rubric (or rubric rejection), its answers and, per
    answer, grades, grade failures, scores and error labels. Returns how many records went."""
    answers = [answer.id for answer in store.iter(Answer, parent_id=case_id)]
    deleted = 0
    for cls in (Grade, GradeFailure, Score, ErrorLabel):
        ids = [record.id for answer in answers for record in store.iter(cls, parent_id=answer)]
        deleted += store.delete(cls.kind, ids)
    deleted += store.delete(Answer.kind, answers)
    deleted += store.delete(Rubric.kind, [rubric.id for rubric in store.iter(Rubric, parent_id=case_id)])
    rubric_rejections = [r.id for r in store.iter(Rejection, parent_id=f"rubric:{case_id}")]
    return deleted + store.delete(Rejection.kind, rubric_rejections)


@dataclass
class StageCount:
    taken: int = 0
    passed: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


@dataclass
class Funnel:
    """Per source and stage: documents in, rejected by reason, out."""

    counts: dict[str, dict[str, StageCount]] = field(
        default_factory=lambda: defaultdict(lambda: {stage: StageCount() for stage in STAGES})
    )

    def add(self, source: str, outcome: Case | Rejection) -> None:
        stages = self.counts[source]
        last = outcome.stage if isinstance(outcome, Rejection) else None
        for stage in STAGES:
            stages[stage].taken += 1
            if stage == last:
                stages[stage].rejected[outcome.reason] += 1  # type: ignore[union-attr]
                return
            stages[stage].passed += 1

    def rows(self) -> Iterable[tuple[str, str, StageCount]]:
        for source in sorted(self.counts):
            for stage in STAGES:
                yield source, stage, self.counts[source][stage]


async def curate_store(
    store: Store,
    chain: Chain,
    *,
    limit: int | None = None,
    batch_size: int = 16,
    redo: bool = False,
    on_cases: Callable[[list[Case]], None] | None = None,
) -> tuple[StageResult, Funnel]:
    """Curate every pending document (at most `limit`), writing cases and rejections batch by batch.

    With `redo`, documents already curated are curated again and their old outcome replaced.
    `on_cases` is told of the new cases each time a batch is written (`livemed update` feeds them on).
    """
    funnel = Funnel()
    outdated: set[str] = set()  # cases (redo) whose old content had rubrics, answers… built on it

    async def work(doc: Doc) -> list[Case | Rejection]:
        outcome = await chain(doc)
        old = store.get(Case, f"case:{doc.id}") if redo else None
        if old is not None and _outdated_by(old, outcome):
            outdated.add(old.id)
        return [outcome]

    def count(doc: Doc, produced: Any) -> None:
        _drop_stale(store, doc, produced)
        if (case_id := f"case:{doc.id}") in outdated:
            drop_case_outputs(store, case_id)
            outdated.discard(case_id)
        for record in produced:
            funnel.add(doc.source, record)

    result = await run_stage(
        store,
        pending_docs(store, limit=limit, redo=redo),
        work,
        output_id=output_ids,
        output_kinds=("case",),  # pending_docs left out what is done; another worker may have cased it since
        done_ids=lambda ids: _finished(store, ids),  # a claiming worker's look after its claim
        batch_size=batch_size,
        options=RunOptions(redo=redo),
        on_item=count,
        on_batch=None if on_cases is None else lambda batch: on_cases(_cases_of(batch)),
    )
    return result, funnel


def _cases_of(batch: list[tuple[Doc, Sequence[Record]]]) -> list[Case]:
    return [record for _, produced in batch for record in produced if isinstance(record, Case)]
