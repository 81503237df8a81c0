"""The grade stage over the store: what to grade, what is graded (answers: `answer/stage.py`; scores:
`score/stage.py`).

The grader functions (`grade_criterion`, `grade_batch`) stay pure of the store; these helpers feed them
through `run_stage`, so every command is incremental: grades are keyed by grade id, shared with
GradeFailure. A re-run skips grades, and by default also failures whose verdict was unparsable or
ambiguous (a failure is a result: at temperature 0 with the response cache it would come back the same);
failures of the call itself (transport, reason "call_failed") are always graded again. With
`retry_failures=True` every failed criterion is graded again, and its call skips the cached reply (so it
reaches the model; the new reply replaces the cache entry). A failure that turns into a Grade is deleted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.answer.stage import A, Answered, in_flight, offline_batch
from livemed.common.ahead import read_ahead
from livemed.common.heap import frozen_heap
from livemed.domains import DomainPack
from livemed.grade.criterion_ids import chosen_criterion_ids
from livemed.grade.grader import (
    Judge,
    Mode,
    Target,
    criterion_id,
    grade_batch,
    grade_criterion,
    grade_id,
    is_offline,
)
from livemed.models import LLM
from livemed.pipeline.runner import Feed, RunOptions, StageResult, batched, item_progress, run_stage
from livemed.records import Answer, Case, Criterion, GradeFailure, Record, Rubric
from livemed.records.base import short_hash
from livemed.records.grading import CALL_FAILED, RubricChoice
from livemed.rubrics.versions import chosen_versions, reviewed
from livemed.store import Store


@dataclass
class GradePlan:
    """The targets to grade, what was left out, and the criteria found graded already (`done`)."""

    targets: list[Target] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    done: int = 0

    def items(self, mode: str) -> int | None:
        """What `grade_all` counts as it goes: criteria per-criterion (batched: not known up front)."""
        if mode != "per-criterion":
            return None
        return self.done + sum(len(t.rubric.criteria) for t in self.targets)


@dataclass
class StreamPlan:
    """`GradePlan` for a whole store (`plan_stream`): the targets are a `TargetStream`, read 500 at a
    time while they are graded; `pending` is how many criteria they hold, counted up front."""

    targets: TargetStream
    skipped: Counter[str]
    done: int = 0
    pending: int = 0

    def items(self, mode: str) -> int | None:
        return self.done + self.pending if mode == "per-criterion" else None


@dataclass
class TargetStream:
    """The targets of the answers `ids`, read 500 at a time as they are iterated (answer, case and
    rubric in three queries per chunk), so grading holds a chunk, never the whole list. An answer
    whose case or rubric is gone by the time its chunk is read is counted in `skipped`. With
    `rubric_version` "latest-approved" a case's rubric has its newest reviewed criteria, if any."""

    store: Store
    ids: list[str]
    pack: DomainPack | None
    skipped: Counter[str]
    rubric_version: RubricChoice = "writer"

    def __iter__(self) -> Iterator[Target]:
        for chunk in batched(self.ids, 500):
            answers = self.store.get_many(Answer, chunk)
            case_ids = sorted({a.case_id for a in answers.values()})
            cases = self.store.get_many(Case, case_ids)
            rubrics = self.store.get_many(Rubric, [f"rubric:{c}" for c in case_ids])
            for case_id, version in chosen_versions(self.store, case_ids, self.rubric_version).items():
                if (rubric := rubrics.get(f"rubric:{case_id}")) is not None:
                    rubrics[rubric.id] = reviewed(rubric, version)
            for one in chunk:
                answer = answers.get(one)
                if answer is None:
                    continue  # deleted since it was planned: nothing to grade
                case, rubric = cases.get(answer.case_id), rubrics.get(f"rubric:{answer.case_id}")
                if case is None:
                    self.skipped["case missing"] += 1
                elif rubric is None:
                    self.skipped["no rubric"] += 1
                else:
                    yield Target(answer, case, rubric, self.pack)


class _FailureReason(TypedDict):
    reason: str


_FAILURE_REASON = TypeAdapter(_FailureReason)


def plan_targets(
    store: Store,
    answers: Iterable[Answer],
    pack: DomainPack | None = None,
    *,
    judge: str | None = None,
    retry_failures: bool = False,
    rubric_version: RubricChoice = "writer",
) -> GradePlan:
    """Pair each answer with its case and rubric; answers without one are counted, not graded. The
    targets are graded with `pack`'s prompts (default: medical). With `rubric_version`
    "latest-approved", a case's rubric has the criteria of its newest reviewed version, if any.

    With `judge`, an answer whose every criterion that judge has graded already (see `_settled`) is
    counted in `plan.done` without reading its case or rubric whole: only the criteria's keys and the
    index of stored grade ids are read, so a re-run with nothing to do is cheap. Everything is read
    for 500 answers at a time (a few queries per chunk)."""
    with store.holding_reads():  # a few small lookups a chunk: one connection for them all
        return _plan_targets(store, answers, pack, judge, retry_failures, rubric_version)


def _plan_targets(
    store: Store,
    answers: Iterable[Answer],
    pack: DomainPack | None,
    judge: str | None,
    retry_failures: bool,
    rubric_version: RubricChoice,
) -> GradePlan:
    plan = GradePlan()
    cases: dict[str, Case | None] = {}
    rubrics: dict[str, Rubric | None] = {}
    for chunk in batched(answers, 500):
        todo = (
            chunk
            if judge is None
            else _unsettled(store, chunk, judge, retry_failures, plan, rubric_version=rubric_version)
        )
        new = sorted({a.case_id for a in todo} - cases.keys())
        found_cases = store.get_many(Case, new)
        found_rubrics = store.get_many(Rubric, [f"rubric:{case_id}" for case_id in new])
        versions = chosen_versions(store, new, rubric_version)
        for case_id in new:
            cases[case_id] = found_cases.get(case_id)
            rubric = found_rubrics.get(f"rubric:{case_id}")
            rubrics[case_id] = reviewed(rubric, versions.get(case_id)) if rubric is not None else None
        for answer in todo:
            case, rubric = cases[answer.case_id], rubrics[answer.case_id]
            if case is None:
                plan.skipped["case missing"] += 1
            elif rubric is None:
                plan.skipped["no rubric"] += 1
            else:
                plan.targets.append(Target(answer, case, rubric, pack))
        if len(cases) > 20_000:  # answers come in case order: older cases are not asked again
            cases.clear()
            rubrics.clear()
    return plan


def plan_stream(
    store: Store,
    answers: Iterable[Answered],
    pack: DomainPack | None = None,
    *,
    judge: str,
    retry_failures: bool = False,
    rubric_version: RubricChoice = "writer",
) -> StreamPlan:
    """`plan_targets` for a whole store: the same answers are planned, but only their ids are kept
    (so `answers` may be `stored_answers`: ids and case ids, no payload), and on the same rubrics
    (`rubric_version`);
    the targets (`TargetStream`) are read chunk by chunk while they are graded. One pass over the
    answers reads the criteria's keys and the index of stored grade ids (as a re-run does), counting
    what is done, what cannot be graded and the criteria still to grade (`plan.pending`)."""
    counted, skipped, ids, pending = GradePlan(), Counter[str](), list[str](), 0

    def read(chunk: list[Answered]) -> _Found:
        with store.holding_reads():  # a few small lookups a chunk: one connection for them
            return _found(store, chunk, retry_failures, rubric_version)

    for chunk, found in read_ahead(batched(answers, 500), read):
        for answer in _unsettled_of(chunk, found, judge, counted):
            rubric = found.keys.get(f"rubric:{answer.case_id}")
            if answer.case_id not in found.present:
                skipped["case missing"] += 1
            elif rubric is None:
                skipped["no rubric"] += 1
            else:
                ids.append(answer.id)
                pending += len(rubric)
    stream = TargetStream(store, ids, pack, skipped, rubric_version)
    return StreamPlan(stream, skipped, counted.done, pending)


@dataclass
class _Found:
    """What the store holds for a chunk of answers: the cases found, the criterion ids of their rubrics
    (by rubric id) and the grade ids that count as done (Grades, and unusable verdicts unless retried)."""

    present: set[str]
    keys: dict[str, list[str]]
    done: set[str]


def _unsettled(
    store: Store,
    chunk: list[A],
    judge: str,
    retry_failures: bool,
    plan: GradePlan,
    *,
    rubric_version: RubricChoice = "writer",
) -> list[A]:
    """The answers of `chunk` with a criterion still to grade by `judge` (or without a case or rubric,
    to be counted); the criteria of the others are added to `plan.done` (`_found`, `_unsettled_of`)."""
    return _unsettled_of(chunk, _found(store, chunk, retry_failures, rubric_version), judge, plan)


def _found(
    store: Store, chunk: Sequence[Answered], retry_failures: bool, rubric_version: RubricChoice
) -> _Found:
    """`_Found` for `chunk`, read from indexes and small views only: the cases' ids, the rubrics'
    criterion ids (`criterion_ids`: kept in run state while a rubric is not written again; those of
    the version `rubric_version` picks, a reviewed version's from its record) and the answers' grade
    ids; failures only when the store has any (deleting those a Grade replaced, left by a run stopped
    before its clean-up)."""
    case_ids = sorted({a.case_id for a in chunk})
    present = store.has("case", case_ids)
    keys = chosen_criterion_ids(store, case_ids, rubric_version)
    answer_ids = [a.id for a in chunk]
    graded = set(store.ids_by_parents("grade", answer_ids))
    failed: set[str] = set()
    if store.any_of("grade_failure"):
        failures = store.ids_by_parents("grade_failure", answer_ids)
        resolved = sorted(i for i in failures if i in graded)
        if resolved:
            store.delete("grade_failure", resolved)
        ids = [i for i in failures if i not in graded]
        if not retry_failures:
            failed = {
                i
                for i, f in store.fields_many("grade_failure", ids, _FAILURE_REASON)
                if f["reason"] != CALL_FAILED
            }
    return _Found(present, keys, graded | failed if failed else graded)


def _unsettled_of(chunk: list[A], found: _Found, judge: str, plan: GradePlan) -> list[A]:
    """The answers of `chunk` with a criterion `found` has no settled grade of by `judge`, or without a
    case or rubric; the criteria of the others are added to `plan.done`."""
    done, suffix = found.done, f":{judge}"
    todo = []
    for answer in chunk:
        case_id = answer.case_id
        criteria = found.keys.get(f"rubric:{case_id}")
        if criteria is None or case_id not in found.present:
            todo.append(answer)
            continue
        head = f"grade:{answer.id}:"  # grade_id(answer.id, criterion, judge), without a call per criterion
        if all(f"{head}{h}{suffix}" in done for h in criteria):
            plan.done += len(criteria)
        else:
            todo.append(answer)
    return todo


Item = tuple[Target, list[Criterion]]  # one answer and the criteria one call grades (one, per-criterion)


@dataclass
class GradeJob:
    """One judge grading targets: the items still to grade, the work per item, the clean-up after.

    `grade_all` runs it over a list of targets; `live.stream` hands it targets as answers are
    written, through a `Feed` of items (`run` takes either). An item is an answer with one criterion
    (per-criterion mode) or all its criteria still to grade (batched)."""

    store: Store
    judge: Judge
    mode: Mode = "per-criterion"
    retry_failures: bool = False
    settled: Counter[str] = field(default_factory=Counter)
    retried: set[str] = field(default_factory=set)  # grade ids of stored failures graded again
    answer_ids: list[str] = field(default_factory=list)  # every answer seen, for the clean-up

    def __post_init__(self) -> None:
        self.fresh = replace(self.judge, refresh=True) if isinstance(self.judge, LLM) else self.judge

    @property
    def per_criterion(self) -> bool:
        return self.mode == "per-criterion"

    def items(self, targets: Iterable[Target]) -> Iterator[Item]:
        for chunk in batched(targets, 256):
            self.answer_ids.extend(t.answer.id for t in chunk)
            for target, todo in _pending(
                self.store, chunk, self.judge.id, self.retry_failures, self.settled, self.retried
            ):
                if self.per_criterion:
                    yield from ((target, [c]) for c in todo)
                else:
                    yield target, todo

    def output_id(self, item: Item) -> list[str]:
        """The claim key on PostgreSQL (`run_stage` claims an item by its first id), then the grade ids.
        Per criterion the key is the answer's (`grade-answer:`): one claim covers every criterion of an
        answer in flight. Batched it is the answer's batch of criteria (`grade-batch:`; done once settled:
        one reply writes them all). Neither key is a stored id, so an item is done when its grades are."""
        target, criteria = item
        answer, judge = target.answer.id, self.judge.id  # properties: each made once an item
        if self.per_criterion:
            return [f"grade-answer:{answer}:{judge}", grade_id(answer, criterion_id(criteria[0]), judge)]
        ids = [grade_id(answer, criterion_id(c), judge) for c in criteria]
        return [f"grade-batch:{answer}:{judge}:{short_hash(*sorted(ids))}", *ids]

    @property
    def output_kinds(self) -> list[str]:
        return ["grade"]

    def done_ids(self, ids: list[str]) -> set[str]:
        """The grade ids that count as done: Grades, and (unless retrying failures) unusable verdicts.
        Another worker's unparsable verdict is not graded again; a failed call is (`_settled`).
        `output_id`'s ids (a claim key, then the grade ids of its answer) are looked up by answer (a
        range of the parent index for a batch's answers, as `_pending` does), other ids one by one."""
        answers = list(dict.fromkeys(a for a in map(self._answer_of, ids) if a is not None))
        if not answers:
            return _settled(self.store, ids, self.retry_failures)
        return _settled_of(self.store, answers, set(ids), self.retry_failures)[0]

    def _answer_of(self, key: str) -> str | None:
        """The answer id a claim key of `output_id` names (None for a grade id)."""
        judge = f":{self.judge.id}"
        if key.startswith("grade-batch:"):
            key = "grade-answer:" + key[len("grade-batch:") :].rsplit(":", 1)[0]  # less the batch's hash
        if key.startswith("grade-answer:") and key.endswith(judge):
            return key[len("grade-answer:") : -len(judge)]
        return None

    async def work(self, item: Item) -> list[Record]:
        target, criteria = item
        judge = self.judge
        if self.retried and any(
            grade_id(target.answer.id, criterion_id(c), judge.id) in self.retried for c in criteria
        ):
            judge = self.fresh
        if self.per_criterion:
            return [await grade_criterion(target, criteria[0], judge)]
        return list(await grade_batch(target, criteria, judge))

    async def run(
        self,
        items: Iterable[Item] | Feed[Item],
        *,
        batch_size: int,
        window: int | None = None,
        inline: bool = False,
    ) -> StageResult:
        """The grading stage over `items` (made by `items()`, so looked up in the store just before),
        then `finish`: up to `window` calls' items in flight (default `in_flight(judge, batch_size)`), written
        `batch_size` items a transaction; `inline` for an offline grader's work run in place."""
        result = await run_stage(
            self.store,
            items,
            self.work,
            output_id=self.output_id,
            output_kinds=self.output_kinds,
            done_ids=self.done_ids,
            batch_size=batch_size,
            window=window or in_flight(self.judge, batch_size),
            options=RunOptions(inline=inline, checked=True),
        )
        return self.finish(result)

    def finish(self, result: StageResult) -> StageResult:
        """Count the criteria left alone as seen and skipped; delete failures that are Grades now."""
        if self.per_criterion:
            result.seen += self.settled["criteria"]
            result.skipped += self.settled["criteria"]
        _drop_resolved_failures(self.store, self.answer_ids, self.judge.id)
        result.retry = retry_hint(self.judge.id)
        return result


def retry_hint(judge: str) -> str:
    """The command that grades a judge's unusable verdicts again (a grader template is named again)."""
    model, _, template = judge.partition("@tpl-")
    again = f"`livemed grade --judge {model} --retry-failures`"
    setup = ", with --grader-setup healthbench" if template.endswith("-healthbench") else ""
    return f"grade them again with {again}" + (f" and your --grader-template{setup}" if template else "")


@frozen_heap
async def grade_all(
    store: Store,
    targets: Iterable[Target],
    judge: Judge,
    *,
    mode: Mode = "per-criterion",
    retry_failures: bool = False,
    batch_size: int | None = None,
    window: int | None = None,
    done: int = 0,
) -> StageResult:
    """Grade every (answer, criterion) not graded by `judge` yet; see the module doc for failures.

    Up to `window` calls' items are in flight (default: `in_flight(judge)`). `done`: criteria found
    graded already by `plan_targets` (left out of `targets`), counted as seen and skipped. Grades are
    written `batch_size` items a transaction (default 64; `offline_batch` for an offline grader,
    whose items finish at once)."""
    job = GradeJob(store, judge, mode, retry_failures)
    batch_size = batch_size or (64 if isinstance(judge, LLM) else offline_batch(store))
    if mode == "per-criterion":
        job.settled["criteria"] += done
    with _settled_count_as_done(job.settled if mode == "per-criterion" else None):
        return await job.run(
            job.items(targets), batch_size=batch_size, window=window, inline=is_offline(judge)
        )


@contextmanager
def _settled_count_as_done(settled: Counter[str] | None) -> Iterator[None]:
    """While grading per criterion, the progress bar counts the criteria already graded as done."""
    report = item_progress.get()
    if report is None or settled is None:
        yield
        return
    token = item_progress.set(lambda n: report(n + settled["criteria"]))
    try:
        yield
    finally:
        item_progress.reset(token)


def _settled(store: Store, ids: list[str], retry_failures: bool) -> set[str]:
    """The grade ids not to grade again: Grades, and failures that are not transport failures."""
    done = store.has("grade", ids)
    if retry_failures:
        return done
    for failure_id in store.has("grade_failure", ids) - done:
        failure = store.get(GradeFailure, failure_id)
        if failure is not None and not failure.call_failed:
            done.add(failure_id)
    return done


def _pending(
    store: Store,
    targets: list[Target],
    judge: str,
    retry_failures: bool,
    settled: Counter[str],
    retried: set[str],
) -> Iterator[tuple[Target, list[Criterion]]]:
    """Each target with the criteria still to grade; the criteria left alone (`_settled`'s rule) are
    counted in `settled["criteria"]`, and with `retry_failures` the ids of stored failures to grade
    again are added to `retried`. The grades of a chunk are found by answer (one range of the parent
    index per chunk, however many criteria), failures only when the store has any."""
    for start in range(0, len(targets), 256):
        chunk = targets[start : start + 256]
        ids = [[grade_id(t.answer.id, criterion_id(c), judge) for c in t.rubric.criteria] for t in chunk]
        wanted = {i for group in ids for i in group}
        done, failures = _settled_of(store, [t.answer.id for t in chunk], wanted, retry_failures)
        if retry_failures:
            retried.update(failures)
        settled["criteria"] += len(done)
        for target, group in zip(chunk, ids, strict=True):
            todo = [c for c, i in zip(target.rubric.criteria, group, strict=True) if i not in done]
            if todo:
                yield target, todo


def _settled_of(
    store: Store, answer_ids: Sequence[str], wanted: set[str], retry_failures: bool
) -> tuple[set[str], set[str]]:
    """Of `wanted` (grade ids of these answers), those settled by `_settled`'s rule, and the stored
    failures among them; found by answer, failures only when the store has any."""
    done = wanted.intersection(store.ids_by_parents("grade", answer_ids))
    failures: set[str] = set()
    if store.any_of("grade_failure"):
        failures = wanted.intersection(store.ids_by_parents("grade_failure", answer_ids)) - done
    if failures and not retry_failures:
        reasons = store.fields_many("grade_failure", sorted(failures), _FAILURE_REASON)
        done.update(i for i, f in reasons if f["reason"] != CALL_FAILED)
    return done, failures


def _drop_resolved_failures(store: Store, answer_ids: Sequence[str], judge: str) -> None:
    """Delete every stored failure of `judge` on these answers that has a Grade now. A store without
    failures costs one indexed query; otherwise failures are found by answer (500 per query)."""
    if not store.any_of("grade_failure"):
        return
    suffix = f":{judge}"
    for chunk in batched(answer_ids, 500):
        failures = [i for i in store.ids_by_parents("grade_failure", chunk) if i.endswith(suffix)]
        resolved = store.has("grade", failures) if failures else set()
        if resolved:
            store.delete("grade_failure", sorted(resolved))


__all__ = [
    "GradeJob",
    "GradePlan",
    "Item",
    "StreamPlan",
    "TargetStream",
    "grade_all",
    "plan_stream",
    "plan_targets",
    "retry_hint",
]
