"""A reviewer's queues: the next items to label, and one item with all a reviewer needs to judge it.

- `audit`: the grader's audit sample (`review.sample`), in a seeded order that mixes the cells, so the
  order gives away neither axis nor verdict; the item shows the case as the candidate saw it, the answer
  and the criterion, never the grader's verdict or explanation (blind). An item marked `double` waits
  for two reviewers, the others for one; nobody is asked twice.
- `failures`: verdicts the grader gave but that cannot be used (ambiguous, unparsable, missing from a
  batch), with the grader's raw reply, for a reviewer to settle.
- `criteria`: each criterion of each case's current rubric (the newest reviewed version, or the
  writer's) that no reviewer has acted on yet, with the case's expert advice beside it.
- `cases`: documents the Controller rejected (grounding, leak audit) or any stage rejected as a leak,
  with the text and the reason, to confirm or overturn.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from livemed.curate.view import candidate_view
from livemed.domains import DomainPack
from livemed.errors import UserError
from livemed.grade.criterion_ids import chosen_criterion_ids
from livemed.pipeline.runner import batched
from livemed.records import (
    Answer,
    AuditSample,
    Case,
    Criterion,
    Doc,
    GradeFailure,
    Label,
    Rejection,
    Rubric,
    RubricVersion,
)
from livemed.records.review import QUEUES, AuditItem, Queue
from livemed.rubrics.versions import chosen_versions, latest_versions, reviewed
from livemed.store import Store

CHUNK = 2000  # rubrics a query
REVIEWED_STAGES = frozenset({"controller"})  # and any stage's rejection whose reason names a leak


@dataclass(frozen=True)
class QueueItem:
    """One item of a queue as the app shows it (all outside text is shown as text)."""

    queue: Queue
    item_id: str
    prompt: str
    answer: str | None = None
    criterion: Criterion | None = None
    advice: str | None = None
    detail: dict[str, str] = field(default_factory=dict)
    mine: Label | None = None


def label_key(label_id: str) -> tuple[str, str, str]:
    """(queue, item id, reviewer) of a label id (`label:{queue}:{item}:{reviewer}`)."""
    queue, rest = label_id.removeprefix("label:").split(":", 1)
    item_id, reviewer = rest.rsplit(":", 1)
    return queue, item_id, reviewer


def labelled(store: Store, queue: Queue) -> dict[str, set[str]]:
    """Who has labelled each item of `queue` (from the label ids alone)."""
    who: dict[str, set[str]] = {}
    for label_id in store.ids(Label.kind):
        kind, item_id, reviewer = label_key(label_id)
        if kind == queue:
            who.setdefault(item_id, set()).add(reviewer)
    return who


def audit_sample(store: Store, judge: str | None) -> AuditSample:
    """The audit sample of `judge`, or the only one stored when `judge` is None."""
    return _drawn(store, judge).sample


@dataclass(frozen=True)
class _Drawn:
    """A stored audit sample with its items by grade id and in the order the queue offers them."""

    written: datetime
    sample: AuditSample
    items: dict[str, AuditItem]
    order: list[AuditItem]


_DRAWN: dict[tuple[str, str], _Drawn] = {}  # (store URL, sample id) → the sample as last read


def _drawn(store: Store, judge: str | None) -> _Drawn:
    """`audit_sample`'s sample, read and ordered again only when it was written again (every page of
    the audit queue needs it: one indexed lookup of its write time instead of its 300 items)."""
    if judge is None:
        ids = list(store.ids(AuditSample.kind))
        if len(ids) != 1:
            found = ", ".join(i.removeprefix("audit_sample:") for i in ids) or "none"
            raise UserError(f"name the grader to audit with --judge (audit samples stored: {found})")
        judge = ids[0].removeprefix("audit_sample:")
    sample_id = f"audit_sample:{judge}"
    written = store.updated_at(AuditSample.kind, [sample_id]).get(sample_id)
    kept = _DRAWN.get((store.url, sample_id))
    if written is not None and (kept is None or kept.written != written):
        sample = store.get(AuditSample, sample_id)
        if sample is not None:
            order = sorted(sample.items, key=lambda i: _order(sample.seed, i.grade_id))
            kept = _Drawn(written, sample, {i.grade_id: i for i in sample.items}, order)
            _DRAWN[(store.url, sample_id)] = kept
    if written is None or kept is None:
        raise UserError(f"no audit sample for grader {judge!r}: draw one first (review sample)")
    return kept


def pending(
    store: Store,
    reviewer: str,
    queue: Queue,
    *,
    judge: str | None = None,
    limit: int = 50,
    pack: DomainPack | None = None,
) -> list[QueueItem]:
    """The next items of `queue` that `reviewer` has not labelled and that still need a label."""
    ids = pending_ids(store, reviewer, queue, judge=judge, limit=limit)
    return [get_item(store, reviewer, queue, item_id, pack=pack, judge=judge) for item_id in ids]


def pending_ids(
    store: Store, reviewer: str, queue: Queue, *, judge: str | None = None, limit: int = 50
) -> list[str]:
    """The ids of `pending`'s items (the items themselves not read)."""
    return list(_pending_ids(store, reviewer, queue, judge, limit))


def _pending_ids(store: Store, reviewer: str, queue: Queue, judge: str | None, limit: int) -> Iterator[str]:
    who = labelled(store, queue)
    wanted = _wanted(store, queue, judge)
    found = 0
    for item_id, needed in wanted:
        by = who.get(item_id, set())
        if reviewer not in by and len(by) < needed:
            yield item_id
            found += 1
            if found >= limit:
                return


def _wanted(store: Store, queue: Queue, judge: str | None) -> Iterator[tuple[str, int]]:
    """(item id, labels it needs) of every item of `queue`, in the order they are offered."""
    if queue == "audit":
        yield from ((item.grade_id, 2 if item.double else 1) for item in _drawn(store, judge).order)
    elif queue == "failures":
        yield from ((failure_id, 1) for failure_id, _ in _failures(store, judge))
    elif queue == "criteria":
        yield from _criteria_ids(store)
    else:
        for rejection in store.iter(Rejection):
            if _reviewable(rejection):
                yield rejection.id, 1


def _order(seed: int, grade_id: str) -> str:
    return hashlib.sha256(f"{seed}\x1forder\x1f{grade_id}".encode()).hexdigest()


def _failures(store: Store, judge: str | None) -> Iterator[tuple[str, GradeFailure]]:
    for failure in store.iter(GradeFailure):
        if not failure.call_failed and (judge is None or failure.judge == judge):
            yield failure.id, failure


def _criteria_ids(store: Store) -> Iterator[tuple[str, int]]:
    """`case#criterion` of each criterion of each case's current rubric that no reviewer approved or
    wrote, from the rubrics' kept criterion ids (`grade.criterion_ids`), not their payloads."""
    case_ids = [rubric_id.removeprefix("rubric:") for rubric_id in store.ids(Rubric.kind)]
    for chunk in batched(case_ids, CHUNK):
        current = chosen_criterion_ids(store, chunk, "latest-approved")
        versions = chosen_versions(store, chunk, "latest-approved")
        for case_id in chunk:
            approved = set(versions[case_id].approved) if case_id in versions else set()
            ids = current.get(f"rubric:{case_id}", [])
            yield from ((f"{case_id}#{i}", 1) for i in ids if i not in approved)


def _reviewable(rejection: Rejection) -> bool:
    return rejection.stage in REVIEWED_STAGES or "leak" in rejection.reason


def queue_sizes(store: Store, *, judge: str | None = None) -> dict[Queue, int]:
    """How many items each queue holds (a queue with nothing to review, or no audit sample, holds 0)."""
    sizes: dict[Queue, int] = {}
    for queue in QUEUES:
        try:
            sizes[queue] = sum(1 for _ in _wanted(store, queue, judge))
        except UserError:
            sizes[queue] = 0  # no audit sample drawn yet
    return sizes


def progress(
    store: Store, reviewer: str, *, judge: str | None = None, sizes: dict[Queue, int] | None = None
) -> dict[Queue, tuple[int, int]]:
    """(items `reviewer` labelled, items in the queue) per queue; `sizes`: `queue_sizes` counted earlier."""
    mine: Counter[str] = Counter()
    for label_id in store.ids(Label.kind):
        queue, _, who = label_key(label_id)
        if who == reviewer:
            mine[queue] += 1
    sizes = sizes if sizes is not None else queue_sizes(store, judge=judge)
    return {queue: (min(mine[queue], sizes[queue]), sizes[queue]) for queue in QUEUES}


def get_item(
    store: Store,
    reviewer: str,
    queue: Queue,
    item_id: str,
    *,
    pack: DomainPack | None = None,
    judge: str | None = None,
) -> QueueItem:
    """One item of `queue` with what the reviewer needs to judge it; UserError if it is not in it."""
    mine = store.get(Label, f"label:{queue}:{item_id}:{reviewer}")
    if queue == "audit":
        return _audit_item(store, item_id, mine, pack, judge)
    if queue == "failures":
        return _failure_item(store, item_id, mine, pack)
    if queue == "criteria":
        return _criterion_item(store, item_id, mine, pack)
    return _case_item(store, item_id, mine)


def _audit_item(
    store: Store, item_id: str, mine: Label | None, pack: DomainPack | None, judge: str | None
) -> QueueItem:
    drawn = _drawn(store, judge)
    item = drawn.items.get(item_id)
    if item is None:
        raise UserError(f"{item_id} is not in the audit sample of {drawn.sample.judge}")
    case, answer, criterion = _graded(store, item.case_id, item.answer_id, item.criterion_id)
    return QueueItem("audit", item_id, candidate_view(case, pack), answer.text, criterion, mine=mine)


def _failure_item(store: Store, item_id: str, mine: Label | None, pack: DomainPack | None) -> QueueItem:
    failure = store.get(GradeFailure, item_id)
    if failure is None or failure.call_failed:
        raise UserError(f"{item_id} is not an unusable verdict")
    case, answer, criterion = _graded(store, failure.case_id, failure.answer_id, failure.criterion_id)
    detail = {"reason": failure.reason, "grader": failure.judge, "raw": failure.raw, "detail": failure.detail}
    return QueueItem(
        "failures", item_id, candidate_view(case, pack), answer.text, criterion, detail=detail, mine=mine
    )


def _criterion_item(store: Store, item_id: str, mine: Label | None, pack: DomainPack | None) -> QueueItem:
    case_id, _, criterion_id = item_id.partition("#")
    case, rubric = store.get(Case, case_id), store.get(Rubric, f"rubric:{case_id}")
    if case is None or rubric is None:
        raise UserError(f"{item_id}: no such case or rubric")
    current = reviewed(rubric, latest_versions(store, [case_id]).get(case_id))
    criterion = next((c for c in current.criteria if c.id == criterion_id), None)
    if criterion is None and mine is not None and mine.verdict in ("edit", "strike"):
        criterion = next((c for c in rubric.criteria if c.id == criterion_id), None)  # acted on already
    if criterion is None:
        raise UserError(f"{item_id}: not a criterion of the case's current rubric")
    advice = "\n".join(f"- {line}" for line in case.advice)
    return QueueItem("criteria", item_id, candidate_view(case, pack), None, criterion, advice, mine=mine)


def _case_item(store: Store, item_id: str, mine: Label | None) -> QueueItem:
    rejection = store.get(Rejection, item_id)
    if rejection is None or not _reviewable(rejection):
        raise UserError(f"{item_id} is not a reviewable rejection")
    doc = store.get(Doc, rejection.record_id) if rejection.record_kind == Doc.kind else None
    text = "\n\n".join(part for part in (doc.title, doc.text) if part) if doc else ""
    detail = {"stage": rejection.stage, "reason": rejection.reason, "detail": rejection.detail}
    detail |= {"source": doc.source, "url": doc.url or ""} if doc else {}
    return QueueItem("cases", item_id, text, detail=detail, mine=mine)


def _graded(store: Store, case_id: str, answer_id: str, criterion_id: str) -> tuple[Case, Answer, Criterion]:
    case, answer = store.get(Case, case_id), store.get(Answer, answer_id)
    rubric = store.get(Rubric, f"rubric:{case_id}")
    if case is None or answer is None or rubric is None:
        raise UserError(f"{answer_id}: its case, answer or rubric is gone from the store")
    criteria = list(rubric.criteria)
    for version in store.by_parents(RubricVersion, [case_id]):  # a criterion a reviewer wrote
        criteria.extend(version.criteria)
    criterion = next((c for c in criteria if c.id == criterion_id), None)
    if criterion is None:
        raise UserError(f"{answer_id}: criterion {criterion_id} is in none of the case's rubric versions")
    return case, answer, criterion
