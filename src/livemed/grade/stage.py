"""Store-facing glue for answers and grades (scores: `score.stage`): what to do, what is done.

The stage functions (`answer_case`, `grade_criterion`, `grade_batch`) stay pure of the store; these
helpers feed them through `run_stage`, so every command is incremental:

- answers are keyed by answer id; a failed call leaves a Rejection (stage "answer") but no answer,
  so the next run retries it, and the stale Rejection is deleted once the answer exists.
- grades are keyed by grade id, shared with GradeFailure. A re-run skips grades, and by default
  also failures whose verdict was unparsable or ambiguous (a failure is a result: at temperature 0
  with the response cache it would come back the same); failures of the call itself (transport,
  reason "call_failed") are always graded again. With `retry_failures=True` every failed criterion is
  graded again, and its call skips the cached reply (so it reaches the model; the new reply replaces
  the cache entry). A failure that turns into a Grade is deleted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.domains import DomainPack
from livemed.answer.ask import OfflineAnswerer, answer_case, answer_id, answer_model, rejection_id
from livemed.grade.criterion_ids import criterion_ids
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
from livemed.common.heap import frozen_heap
from livemed.models import LLM, Settings
from livemed.pipeline.runner import Feed, StageResult, batched, item_progress, run_stage
from livemed.records import Answer, Case, Criterion, GradeFailure, Record, Rubric
from livemed.records.base import short_hash
from livemed.records.grading import CALL_FAILED
from livemed.store import Store

MAX_IN_FLIGHT = 4096  # items in flight per stage at most, whatever the models allow (memory)
OFFLINE_BATCH = 512  # an offline model's items per write (no calls in flight: fewer, larger writes)
# On PostgreSQL each batch is claimed, looked at again, written and given back: four or five round trips and
# the server's work on them, so larger batches (`grade` at 10k: 21.5-22.4 s against 25.4-26.9 s with
# 512). On SQLite 2,048 cost `grade` more CPU (12.9-14.3 against 11.1-13.2 s; docs/benchmarks.md).
OFFLINE_BATCH_POSTGRESQL = 2048


def offline_batch(store: Store) -> int:
    """An offline model's items per write on this store."""
    return OFFLINE_BATCH_POSTGRESQL if store.dialect == "postgresql" else OFFLINE_BATCH


def in_flight(model: LLM | OfflineAnswerer | Judge, default: int = 64) -> int:
    """How many items a stage keeps in flight for `model`: twice its `max_concurrency` (so a slot that
    frees finds the next call already waiting; rate limits queue the rest), at most MAX_IN_FLIGHT; an
    offline baseline does no I/O and gets `default`."""
    if isinstance(model, LLM):
        return min(MAX_IN_FLIGHT, 2 * model.engine.limits(model.model).max_concurrency)
    return default


@frozen_heap
async def answer_all(
    store: Store,
    cases: Iterable[Case] | Feed[Case],
    answerer: LLM | OfflineAnswerer,
    *,
    settings: Settings,
    samples: int = 1,
    batch_size: int | None = None,
    window: int | None = None,
    on_answers: Callable[[list[tuple[Case, Answer]]], None] | None = None,
    pack: DomainPack | None = None,
) -> StageResult:
    """Every (case, sample) without an answer from this model gets one (or a Rejection).

    Written `batch_size` items a transaction (default 64; `offline_batch` for an offline answerer,
    whose items never wait). Up to `window` items are in flight (default: `in_flight(answerer)`);
    `on_answers` is told of the answers each time a batch of them is written. `cases` may be a `Feed`
    another stage fills, or any iterable, read `CASE_CHUNK` cases at a time (memory bounded by the
    chunk, not by the store)."""
    model = answerer.id
    batch_size = batch_size or (64 if isinstance(answerer, LLM) else offline_batch(store))
    if isinstance(cases, Feed):
        return await _answer_feed(
            store, cases, answerer, settings, samples, batch_size, window, on_answers, pack
        )
    prefetch = getattr(answerer, "prefetch", None)  # offline/retrieval: one search per chunk (offline.py)

    def items() -> Iterator[tuple[Case, int]]:
        for chunk in batched(cases, CASE_CHUNK):
            keys = [(case, n) for case in chunk for n in range(samples)]
            answered = store.has("answer", [answer_id(case.id, model, n) for case, n in keys])
            _drop_stale_rejections(store, [(c.id, n) for c, n in keys], model, answered)
            if prefetch is not None:
                prefetch(
                    list({c.id: c for c, n in keys if answer_id(c.id, model, n) not in answered}.values())
                )
            yield from keys

    new: list[Answer] = []  # answers written since their rejections were last looked for

    def drop_stale() -> None:
        _drop_stale_rejections(store, [(a.case_id, a.sample) for a in new], model, {a.id for a in new})
        new.clear()

    def written(batch: list[tuple[tuple[Case, int], Sequence[Record]]]) -> None:
        answers = [(item[0], r) for item, records in batch for r in records if isinstance(r, Answer)]
        new.extend(a for _, a in answers)
        if len(new) >= 500:
            drop_stale()
        if on_answers is not None:
            on_answers(answers)

    result = await _answer_items(store, items(), answerer, settings, batch_size, window, written, pack)
    drop_stale()
    return result


CASE_CHUNK = 1000  # cases `answer_all` reads, checks and prefetches at a time


async def _answer_items(
    store: Store,
    items: Iterable[tuple[Case, int]] | Feed[tuple[Case, int]],
    answerer: LLM | OfflineAnswerer,
    settings: Settings,
    batch_size: int,
    window: int | None,
    written: Callable[[list[tuple[tuple[Case, int], Sequence[Record]]]], None],
    pack: DomainPack | None,
) -> StageResult:
    model = answerer.id

    async def work(item: tuple[Case, int]) -> list[Record]:
        return await answer_case(item[0], answerer, settings=settings, sample=item[1], pack=pack)

    return await run_stage(
        store,
        items,
        work,
        output_id=lambda item: answer_id(item[0].id, model, item[1]),
        output_kinds=["answer"],
        batch_size=batch_size,
        window=window or in_flight(answerer, batch_size),
        on_batch=written,
    )


async def _answer_feed(
    store: Store,
    cases: Feed[Case],
    answerer: LLM | OfflineAnswerer,
    settings: Settings,
    samples: int,
    batch_size: int,
    window: int | None,
    on_answers: Callable[[list[tuple[Case, Answer]]], None] | None,
    pack: DomainPack | None,
) -> StageResult:
    """`answer_all` for cases another stage puts in a feed while this one runs (`livemed eval`)."""
    keys: list[tuple[Case, int]] = []

    def samples_of(case: Case) -> list[tuple[Case, int]]:
        keys.extend(made := [(case, n) for n in range(samples)])
        return made

    def written(batch: list[tuple[tuple[Case, int], Sequence[Record]]]) -> None:
        if on_answers is not None:
            on_answers([(item[0], r) for item, records in batch for r in records if isinstance(r, Answer)])

    result = await _answer_items(
        store, cases.expand(samples_of), answerer, settings, batch_size, window, written, pack
    )
    for chunk in batched(keys, 500):
        _drop_stale_rejections(store, [(case.id, n) for case, n in chunk], answerer.id, None)
    return result


def _drop_stale_rejections(
    store: Store, keys: list[tuple[str, int]], model: str, answered: set[str] | None
) -> None:
    """Delete the Rejection of every (case, sample) that has an answer now (`answered`: the answer
    ids known to be stored; None: every one of `keys` is looked up)."""
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        ids = [answer_id(c, model, n) for c, n in chunk]
        found = store.has("answer", ids) if answered is None else answered.intersection(ids)
        candidates = [rejection_id(c, model, n) for (c, n), i in zip(chunk, ids, strict=True) if i in found]
        stale = store.has("rejection", candidates) if candidates else set()
        if stale:
            store.delete("rejection", sorted(stale))


class Answered(Protocol):
    """What planning reads of an answer: its id and its case (an `Answer`, or an `AnswerKey`)."""

    @property
    def id(self) -> str: ...

    @property
    def case_id(self) -> str: ...


A = TypeVar("A", bound=Answered)


class AnswerKey(NamedTuple):
    """A stored answer's id and case id, read from the index without its payload (`stored_answers`)."""

    id: str
    case_id: str


def stored_answers(store: Store, model: str | None = None) -> Iterator[AnswerKey]:
    """Every stored answer (of `model`, when given) as an `AnswerKey`, in id order: the order and the
    answers of `store.iter(Answer)`, without reading or validating a single payload."""
    for one, case_id in store.id_parents("answer"):
        if case_id is not None and (model is None or answer_model(one, case_id) == model):
            yield AnswerKey(one, case_id)


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
    whose case or rubric is gone by the time its chunk is read is counted in `skipped`."""

    store: Store
    ids: list[str]
    pack: DomainPack | None
    skipped: Counter[str]

    def __iter__(self) -> Iterator[Target]:
        for chunk in batched(self.ids, 500):
            answers = self.store.get_many(Answer, chunk)
            case_ids = sorted({a.case_id for a in answers.values()})
            cases = self.store.get_many(Case, case_ids)
            rubrics = self.store.get_many(Rubric, [f"rubric:{c}" for c in case_ids])
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
) -> GradePlan:
    """Pair each answer with its case and rubric; answers without one are counted, not graded. The
    targets are graded with `pack`'s prompts (default: medical).

    With `judge`, an answer whose every criterion that judge has graded already (see `_settled`) is
    counted in `plan.done` without reading its case or rubric whole: only the criteria's keys and the
    index of stored grade ids are read, so a re-run with nothing to do is cheap. Everything is read
    for 500 answers at a time (a few queries per chunk)."""
    plan = GradePlan()
    cases: dict[str, Case | None] = {}
    rubrics: dict[str, Rubric | None] = {}
    for chunk in batched(answers, 500):
        todo = chunk if judge is None else _unsettled(store, chunk, judge, retry_failures, plan)
        new = sorted({a.case_id for a in todo} - cases.keys())
        found_cases = store.get_many(Case, new)
        found_rubrics = store.get_many(Rubric, [f"rubric:{case_id}" for case_id in new])
        for case_id in new:
            cases[case_id] = found_cases.get(case_id)
            rubrics[case_id] = found_rubrics.get(f"rubric:{case_id}")
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
) -> StreamPlan:
    """`plan_targets` for a whole store: the same answers are planned, but only their ids are kept
    (so `answers` may be `stored_answers`: ids and case ids, no payload);
    the targets (`TargetStream`) are read chunk by chunk while they are graded. One pass over the
    answers reads the criteria's keys and the index of stored grade ids (as a re-run does), counting
    what is done, what cannot be graded and the criteria still to grade (`plan.pending`)."""
    counted, skipped, ids, pending = GradePlan(), Counter[str](), list[str](), 0
    for chunk in batched(answers, 500):
        keys: dict[str, list[str]] = {}
        present: set[str] = set()
        for answer in _unsettled(store, chunk, judge, retry_failures, counted, keys, present):
            rubric = keys.get(f"rubric:{answer.case_id}")
            if answer.case_id not in present:
                skipped["case missing"] += 1
            elif rubric is None:
                skipped["no rubric"] += 1
            else:
                ids.append(answer.id)
                pending += len(rubric)
    return StreamPlan(TargetStream(store, ids, pack, skipped), skipped, counted.done, pending)


def _unsettled(
    store: Store,
    chunk: list[A],
    judge: str,
    retry_failures: bool,
    plan: GradePlan,
    keys: dict[str, list[str]] | None = None,
    present: set[str] | None = None,
) -> list[A]:
    """The answers of `chunk` with a criterion still to grade by `judge` (or without a case or rubric,
    to be counted); the criteria of the others are added to `plan.done`. The rubrics' criterion ids
    and the cases found are left in `keys` and `present` when given.

    Read from indexes and small views only: the cases' ids, the rubrics' criterion ids
    (`criterion_ids`: kept in run state while a rubric is not written again) and the answers' grade
    ids; failures only when the store has any."""
    case_ids = sorted({a.case_id for a in chunk})
    present = present if present is not None else set()
    present.update(store.has("case", case_ids))
    keys = keys if keys is not None else {}
    keys.update(criterion_ids(store, [f"rubric:{c}" for c in case_ids]))
    answer_ids = [a.id for a in chunk]
    graded = set(store.ids_by_parents("grade", answer_ids))
    failed: set[str] = set()
    if store.any_of("grade_failure"):
        failures = store.ids_by_parents("grade_failure", answer_ids)
        resolved = sorted(i for i in failures if i in graded)
        if resolved:  # left by a run stopped before its clean-up: a Grade replaced each
            store.delete("grade_failure", resolved)
        ids = [i for i in failures if i not in graded]
        if not retry_failures:
            failed = {
                i
                for i, f in store.fields_many("grade_failure", ids, _FAILURE_REASON)
                if f["reason"] != CALL_FAILED
            }
    done = graded | failed if failed else graded
    suffix = f":{judge}"
    todo = []
    for answer in chunk:
        case_id = answer.case_id
        criteria = keys.get(f"rubric:{case_id}")
        if criteria is None or case_id not in present:
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
    written. An item is an answer with one criterion (per-criterion mode) or all its criteria still
    to grade (batched)."""

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
        result = await run_stage(
            store,
            job.items(targets),
            job.work,
            output_id=job.output_id,
            output_kinds=job.output_kinds,
            done_ids=job.done_ids,
            batch_size=batch_size,
            window=window or in_flight(judge, batch_size),
            inline=is_offline(judge),
            checked=True,
        )
    return job.finish(result)


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


# Scores live in `score.stage`; these names stay importable from here, imported when first asked
# for (scoring needs NumPy, which `livemed eval` need not load before its first request).
if TYPE_CHECKING:
    from livemed.score.stage import (
        NOT_YET_GRADED,
        ScoreRun,
        items_for,
        score_all,
        score_answer,
        verdicts_by_answer,
        verdicts_of,
    )

_FROM_SCORING = (
    "NOT_YET_GRADED",
    "ScoreRun",
    "items_for",
    "score_all",
    "score_answer",
    "verdicts_by_answer",
    "verdicts_of",
)


def __getattr__(name: str) -> object:
    if name in _FROM_SCORING:
        from livemed.score import stage as scoring

        return getattr(scoring, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MAX_IN_FLIGHT",
    "NOT_YET_GRADED",
    "AnswerKey",
    "Answered",
    "GradeJob",
    "GradePlan",
    "Item",
    "ScoreRun",
    "StreamPlan",
    "TargetStream",
    "answer_all",
    "grade_all",
    "in_flight",
    "items_for",
    "plan_stream",
    "plan_targets",
    "score_all",
    "score_answer",
    "stored_answers",
    "verdicts_by_answer",
    "verdicts_of",
]
