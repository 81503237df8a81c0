"""Store-facing glue for answers, grades and scores: what to do, what is done, write results.

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
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from livemed.grading import score as S
from livemed.grading.answer import OfflineAnswerer, answer_case, answer_id, rejection_id
from livemed.grading.judge import Judge, Mode, Target, grade_batch, grade_criterion, grade_id
from livemed.interop.healthbench import criterion_tags, example_tags_of, is_imported
from livemed.models import LLM, Settings
from livemed.pipeline import StageResult, item_progress, run_stage
from livemed.records import Answer, Case, Criterion, Grade, GradeFailure, Record, Rubric, Score
from livemed.store import Store


async def answer_all(
    store: Store,
    cases: Iterable[Case],
    answerer: LLM | OfflineAnswerer,
    *,
    settings: Settings,
    samples: int = 1,
    batch_size: int = 64,
) -> StageResult:
    """Every (case, sample) without an answer from this model gets one (or a Rejection)."""
    model = answerer.id
    keys = [(case, n) for case in cases for n in range(samples)]

    async def work(item: tuple[Case, int]) -> list[Record]:
        return await answer_case(item[0], answerer, settings=settings, sample=item[1])

    result = await run_stage(
        store,
        keys,
        work,
        output_id=lambda item: answer_id(item[0].id, model, item[1]),
        output_kinds=["answer"],
        batch_size=batch_size,
    )
    _drop_stale_rejections(store, [(case.id, n) for case, n in keys], model)
    return result


def _drop_stale_rejections(store: Store, keys: list[tuple[str, int]], model: str) -> None:
    """Delete the Rejection of every (case, sample) that has an answer now."""
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        answered = store.has("answer", [answer_id(c, model, n) for c, n in chunk])
        candidates = [rejection_id(c, model, n) for c, n in chunk if answer_id(c, model, n) in answered]
        stale = store.has("rejection", candidates) if candidates else set()
        if stale:
            store.delete("rejection", sorted(stale))


@dataclass
class GradePlan:
    """The targets to grade and what was left out."""

    targets: list[Target] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def items(self, mode: str) -> int | None:
        """What `grade_all` counts as it goes: criteria per-criterion (batched: not known up front)."""
        return sum(len(t.rubric.criteria) for t in self.targets) if mode == "per-criterion" else None


def plan_targets(store: Store, answers: Iterable[Answer]) -> GradePlan:
    """Pair each answer with its case and rubric; answers without one are counted, not graded."""
    plan = GradePlan()
    cases: dict[str, Case | None] = {}
    rubrics: dict[str, Rubric | None] = {}
    for answer in answers:
        if answer.case_id not in cases:
            cases[answer.case_id] = store.get(Case, answer.case_id)
            rubrics[answer.case_id] = store.get(Rubric, f"rubric:{answer.case_id}")
        case, rubric = cases[answer.case_id], rubrics[answer.case_id]
        if case is None:
            plan.skipped["case missing"] += 1
        elif rubric is None:
            plan.skipped["no rubric"] += 1
        else:
            plan.targets.append(Target(answer, case, rubric))
    return plan


async def grade_all(
    store: Store,
    targets: Sequence[Target],
    judge: Judge,
    *,
    mode: Mode = "per-criterion",
    retry_failures: bool = False,
    batch_size: int = 64,
) -> StageResult:
    """Grade every (answer, criterion) not graded by `judge` yet; see the module doc for failures."""
    settled: Counter[str] = Counter()
    retried: set[str] = set()  # grade ids of stored failures graded again (only with retry_failures)
    fresh = replace(judge, refresh=True) if isinstance(judge, LLM) else judge

    def pending() -> Iterator[tuple[Target, list[Criterion]]]:
        return _pending(store, targets, judge.id, retry_failures, settled, retried)

    if mode == "per-criterion":

        def pairs() -> Iterator[tuple[Target, Criterion]]:
            for target, todo in pending():
                yield from ((target, c) for c in todo)

        async def one(pair: tuple[Target, Criterion]) -> list[Record]:
            retry = grade_id(pair[0].answer.id, pair[1].id, judge.id) in retried
            return [await grade_criterion(pair[0], pair[1], fresh if retry else judge)]

        with _settled_count_as_done(settled):
            result = await run_stage(
                store,
                pairs(),
                one,
                output_id=lambda p: grade_id(p[0].answer.id, p[1].id, judge.id),
                output_kinds=["grade"],
                batch_size=batch_size,
            )
        result.seen += settled["criteria"]  # settled criteria count as seen and skipped, as before
        result.skipped += settled["criteria"]
    else:

        async def work(item: tuple[Target, list[Criterion]]) -> list[Record]:
            ids = {grade_id(item[0].answer.id, c.id, judge.id) for c in item[1]}
            return list(await grade_batch(item[0], item[1], fresh if ids & retried else judge))

        result = await run_stage(
            store,
            pending(),
            work,
            output_id=lambda i: i[0].answer.id,
            output_kinds=[],
            batch_size=batch_size,
        )
    _drop_resolved_failures(store, targets, judge.id)
    return result


@contextmanager
def _settled_count_as_done(settled: Counter[str]) -> Iterator[None]:
    """While grading per criterion, the progress bar counts the criteria already graded as done."""
    report = item_progress.get()
    if report is None:
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
    targets: Sequence[Target],
    judge: str,
    retry_failures: bool,
    settled: Counter[str],
    retried: set[str],
) -> Iterator[tuple[Target, list[Criterion]]]:
    """Each target with the criteria still to grade (one store query per kind per chunk); the
    criteria left alone are counted in `settled["criteria"]`, and with `retry_failures` the ids of
    stored failures to grade again are added to `retried`."""
    for start in range(0, len(targets), 256):
        chunk = targets[start : start + 256]
        ids = [[grade_id(t.answer.id, c.id, judge) for c in t.rubric.criteria] for t in chunk]
        flat = [i for group in ids for i in group]
        done = _settled(store, flat, retry_failures)
        if retry_failures:
            retried.update(store.has("grade_failure", flat) - done)
        settled["criteria"] += len(done)
        for target, group in zip(chunk, ids, strict=True):
            todo = [c for c, i in zip(target.rubric.criteria, group, strict=True) if i not in done]
            if todo:
                yield target, todo


def _drop_resolved_failures(store: Store, targets: Sequence[Target], judge: str) -> None:
    for target in targets:
        ids = [grade_id(target.answer.id, c.id, judge) for c in target.rubric.criteria]
        resolved = store.has("grade", ids) & store.has("grade_failure", ids)
        if resolved:
            store.delete("grade_failure", sorted(resolved))


# --------------------------------------------------------------------------- scores


NOT_YET_GRADED = "not yet graded (a grader call failed or was not made)"


@dataclass
class ScoreRun:
    scores: list[Score] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)  # model -> answers with a scorable rubric


def items_for(rubric: Rubric, verdicts: dict[str, bool | None]) -> list[S.Item] | None:
    """Score items for a rubric from verdicts by criterion id (None = failed); None if any is missing.

    An imported criterion's axes are its own `axis:` tags only (its livemed axis may be a stand-in)."""
    if any(c.id not in verdicts for c in rubric.criteria):
        return None
    own = not is_imported(rubric)
    return [
        S.Item(c.value, verdicts[c.id], axis=c.axis if own else "", theme=c.theme, tags=tuple(c.tags))
        for c in rubric.criteria
    ]


def verdicts_of(store: Store, answer_id: str, judge: str) -> tuple[dict[str, bool | None], int]:
    """criterion id -> met (None for an unusable verdict), and the number of unusable verdicts; a Grade
    wins over a failure. A criterion whose grader call failed has no verdict at all: it is left out, so
    the answer is not fully graded (and gets no score) until the call succeeds."""
    failures = [f for f in store.iter(GradeFailure, parent_id=answer_id) if f.judge == judge]
    failed = {f.criterion_id for f in failures if not f.call_failed}
    graded = {g.criterion_id: g.met for g in store.iter(Grade, parent_id=answer_id) if g.judge == judge}
    verdicts: dict[str, bool | None] = dict.fromkeys(failed)
    verdicts.update(graded)
    return verdicts, len(failed - graded.keys())


def score_answer(
    answer: Answer,
    rubric: Rubric,
    items: list[S.Item],
    *,
    judge: str,
    failures: int,
    convention: S.Convention,
    policy: S.FailurePolicy,
) -> Score | None:
    """The Score record of one graded answer; None when the rubric has no positive weight."""
    value = S.case_score(items, convention, policy)
    if value is None:
        return None
    per_tag: dict[str, float] = {}
    if convention == "healthbench":  # themes are example tags there: each gets the case score
        per_theme = dict.fromkeys(rubric.themes, value)
        imported = is_imported(rubric)
        tagged = [
            replace(item, tags=tuple(criterion_tags(c, imported=imported)))
            for item, c in zip(items, rubric.criteria, strict=True)
        ]
        per_tag = S.per_tag(tagged, example_tags_of(rubric), convention, policy)
    else:
        per_theme = S.per_theme(items, convention, policy)
    return Score(
        answer_id=answer.id,
        case_id=answer.case_id,
        model=answer.model,
        judge=judge,
        convention=convention,
        score=value,
        per_axis=S.per_axis(items, convention, policy),
        per_theme=per_theme,
        per_tag=per_tag,
        coverage=S.coverage(items, policy) or 0.0,
        harm=S.harm(items, policy) or 0.0,
        failures=failures,
        failure_policy=policy,
        published=rubric.published,
    )


def score_all(
    store: Store,
    judge: str,
    *,
    convention: S.Convention = "livemed",
    policy: S.FailurePolicy = "not-met",
    model: str | None = None,
) -> ScoreRun:
    """Score every answer fully graded by `judge`; others are counted by reason."""
    run = ScoreRun()
    rubrics: dict[str, Rubric | None] = {}
    unscored: list[str] = []
    for answer in store.iter(Answer):
        if model is not None and answer.model != model:
            continue
        if answer.case_id not in rubrics:
            rubrics[answer.case_id] = store.get(Rubric, f"rubric:{answer.case_id}")
        rubric = rubrics[answer.case_id]
        if rubric is None:
            run.excluded["no rubric"] += 1
            continue
        if any(c.value > 0 for c in rubric.criteria):
            run.answers[answer.model] += 1
        verdicts, failures = verdicts_of(store, answer.id, judge)
        items = items_for(rubric, verdicts)
        if items is None:
            run.excluded[NOT_YET_GRADED] += 1
            unscored.append(answer.id)
            continue
        record = score_answer(
            answer, rubric, items, judge=judge, failures=failures, convention=convention, policy=policy
        )
        if record is None:
            run.excluded[S.ZERO_POSITIVE] += 1
        else:
            run.scores.append(record)
    store.put(run.scores)
    _drop_stale_scores(store, unscored, judge, convention, policy)
    if policy != "not-met":
        _drop_legacy_ids(store, run.scores)
    return run


def _drop_stale_scores(store: Store, answer_ids: list[str], judge: str, convention: str, policy: str) -> None:
    """A score stored earlier for an answer that is not fully graded now (e.g. by a livemed that scored
    failed grader calls as not met) is removed: a failed call never stays a number."""
    suffix = "" if policy == "not-met" else f":{policy}"
    ids = [f"score:{a}:{judge}:{convention}{suffix}" for a in answer_ids]
    for start in range(0, len(ids), 500):
        stale = store.has(Score.kind, ids[start : start + 500])
        if stale:
            store.delete(Score.kind, sorted(stale))


def _drop_legacy_ids(store: Store, scores: Sequence[Score]) -> None:
    """Before scores carried their failure policy in their id, an `exclude` score took the default id:
    such a stored score is replaced by the one just written beside it."""
    legacy = [s.id.rsplit(":", 1)[0] for s in scores]
    found = store.has(Score.kind, legacy)
    stale = [i for i in found if (old := store.get(Score, i)) is not None and old.failure_policy != "not-met"]
    if stale:
        store.delete(Score.kind, sorted(stale))
