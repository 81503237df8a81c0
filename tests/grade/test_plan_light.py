"""`grade`'s cheap planning and `answer`'s streaming: the same answers as the full-record paths.

`plan_stream` over `stored_answers` (ids and case ids from the index, no payload) must plan exactly
what `plan_targets` plans over whole `Answer` records, in every state a store can be in: nothing
graded, everything graded, a grade missing, failures of either kind, a new answer, a new judge, a
changed rubric, a case or rubric gone. `answer_all` given an iterable reads it a chunk at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from livemed.answer import stage as runs
from livemed.answer.ask import answer_id, answer_model
from livemed.answer.baselines import ReferenceAnswerer
from livemed.answer.stage import answer_all, stored_answers
from livemed.grade.grader import criterion_id, grade_id
from livemed.grade.lexical import LexicalGrader
from livemed.grade.stage import grade_all, plan_stream, plan_targets
from livemed.models import Settings
from livemed.records import Answer, Case, Criterion, GradeFailure, Rejection
from livemed.records.grading import CALL_FAILED, criterion_key_id
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric

JUDGE = LexicalGrader()


@pytest.mark.parametrize("model", ["fake/candidate", "ollama:llama3:8b", "openai/gpt-4o", "a:b:1"])
@pytest.mark.parametrize("case_id", ["case:demo:1", "case:x:y:z", "c"])
def test_answer_model_inverts_answer_id(case_id: str, model: str) -> None:
    assert answer_model(answer_id(case_id, model, 3), case_id) == model


@pytest.mark.parametrize(
    "one", ["answer:case:demo:1:", "answer:case:demo:1:m:x", "answer:other:m:0", "grade:case:demo:1:m:0"]
)
def test_answer_model_is_none_for_an_id_answer_id_did_not_make(one: str) -> None:
    assert answer_model(one, "case:demo:1") is None


def test_key_id_is_the_criterion_id() -> None:
    criterion = Criterion(text="Advises rest", polarity="positive", axis="accuracy", weight=3)
    assert criterion_key_id(criterion.text, criterion.axis, criterion.weight) == criterion.id
    assert criterion_id(criterion) == criterion.id


def _store(path: Path, n: int = 4) -> Store:
    store = Store(path)
    for i in range(n):
        case = make_case(f"demo:{i}")
        store.put([case, make_rubric(case), make_answer(case), make_answer(case, model="ollama:llama3:8b")])
    return store


def test_stored_answers_are_the_answers_in_id_order_and_by_model(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    every = [(a.id, a.case_id) for a in store.iter(Answer)]
    assert [tuple(k) for k in stored_answers(store)] == every
    for model in ("fake/candidate", "ollama:llama3:8b"):
        mine = [(a.id, a.case_id) for a in store.iter(Answer) if a.model == model]
        assert [tuple(k) for k in stored_answers(store, model)] == mine
        assert len(mine) == 4
    assert list(stored_answers(store, "ollama:llama3")) == []


def _both(store: Store, judge: str = JUDGE.id, retry: bool = False) -> tuple[object, object]:
    """What `plan_stream` over ids and `plan_targets` over whole answers each plan."""
    light = plan_stream(store, stored_answers(store), judge=judge, retry_failures=retry)
    full = plan_targets(store, store.iter(Answer), judge=judge, retry_failures=retry)
    as_light = (light.done, light.pending, sorted(light.skipped.items()), light.targets.ids)
    as_full = (
        full.done,
        sum(len(t.rubric.criteria) for t in full.targets),
        sorted(full.skipped.items()),
        [t.answer.id for t in full.targets],
    )
    return as_light, as_full


def _failure(store: Store, answer: Answer, criterion: Criterion, reason: str) -> None:
    store.delete("grade", [grade_id(answer.id, criterion.id, JUDGE.id)])
    store.put(
        [
            GradeFailure(
                answer_id=answer.id,
                case_id=answer.case_id,
                criterion_id=criterion.id,
                judge=JUDGE.id,
                reason=reason,
            )
        ]
    )


def _grade_everything(store: Store) -> None:
    plan = plan_targets(store, store.iter(Answer), judge=JUDGE.id)
    asyncio.run(grade_all(store, plan.targets, JUDGE, done=plan.done))


def _changes(store: Store) -> Iterator[tuple[str, Callable[[], object]]]:
    """Store states, one after another, each planned by both paths."""
    answers = list(store.iter(Answer))
    first = answers[0]
    rubric = make_rubric(make_case("demo:0"))
    yield "nothing graded", lambda: None
    yield "every criterion graded", lambda: _grade_everything(store)
    yield (
        "one grade missing",
        lambda: store.delete("grade", [grade_id(first.id, rubric.criteria[1].id, JUDGE.id)]),
    )
    yield "graded again", lambda: _grade_everything(store)
    yield "an unparsable verdict", lambda: _failure(store, answers[1], rubric.criteria[0], "unparsable")
    yield "a failed call", lambda: _failure(store, answers[2], rubric.criteria[2], CALL_FAILED)
    case = make_case("demo:9")
    yield "a new answer", lambda: store.put([case, make_rubric(case), make_answer(case)])
    changed = make_rubric(
        make_case("demo:3"),
        [Criterion(text="Advises rest and ice", polarity="positive", axis="accuracy", weight=2)],
    )
    yield "a changed rubric", lambda: store.put([changed])
    yield "a rubric gone", lambda: store.delete("rubric", ["rubric:case:demo:2"])
    yield "a case gone", lambda: store.delete("case", ["case:demo:1"])


def test_planning_from_ids_plans_what_whole_answers_plan_in_every_state(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    seen = []
    for name, change in _changes(store):
        change()
        for retry in (False, True):
            light, full = _both(store, retry=retry)
            assert light == full, (name, retry)
            seen.append(light)
        light, full = _both(store, judge="offline/other")  # a new judge: everything to grade
        assert light == full, name
    assert len({str(s) for s in seen}) >= 6  # the states really differ


def test_a_graded_store_plans_nothing_from_ids(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    _grade_everything(store)
    plan = plan_stream(store, stored_answers(store), judge=JUDGE.id)
    assert (plan.targets.ids, plan.done, plan.pending) == ([], 24, 0)


class _Counted:
    """Cases handed out one at a time, counting how many were taken."""

    def __init__(self, cases: list[Case]) -> None:
        self.cases, self.taken = cases, 0

    def __iter__(self) -> Iterator[Case]:
        for case in self.cases:
            self.taken += 1
            yield case


def test_answer_all_reads_its_cases_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "CASE_CHUNK", 10)
    store = Store(tmp_path / "s.db")
    cases = [make_case(f"demo:{i}") for i in range(60)]
    store.put(cases)
    feed = _Counted(cases)
    taken_at_writes: list[int] = []
    result = asyncio.run(
        answer_all(
            store,
            feed,
            ReferenceAnswerer(),
            settings=Settings(),
            batch_size=5,
            on_answers=lambda batch: taken_at_writes.append(feed.taken),
        )
    )
    assert result.written == {"answer": 60}
    assert taken_at_writes[0] <= 10  # the first answers were written before a second chunk was read
    assert all(b - a <= 10 for a, b in pairwise(taken_at_writes))
    assert store.has("answer", [answer_id(c.id, "offline/reference", 0) for c in cases]) == {
        answer_id(c.id, "offline/reference", 0) for c in cases
    }


def test_an_offline_answerer_writes_its_answers_in_offline_batches(tmp_path: Path) -> None:
    """An offline answerer's items never wait: they are written `OFFLINE_BATCH` a transaction (an LLM's
    64), so a store, PostgreSQL's most of all, gets fewer, larger writes."""
    store = Store(tmp_path / "s.db")
    cases = [make_case(f"demo:{i}") for i in range(runs.OFFLINE_BATCH + 88)]
    store.put(cases)
    sizes: list[int] = []
    result = asyncio.run(
        answer_all(
            store,
            iter(cases),
            ReferenceAnswerer(),
            settings=Settings(),
            on_answers=lambda batch: sizes.append(len(batch)),
        )
    )
    assert result.written == {"answer": len(cases)}
    assert sum(sizes) == len(cases)
    assert max(sizes) > 64  # not an LLM's batch
    assert max(sizes) <= runs.OFFLINE_BATCH


def test_streamed_answers_delete_stale_rejections_of_new_and_earlier_answers(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    cases = [make_case(f"demo:{i}") for i in range(3)]
    model = "offline/reference"

    def rejection(case: Case) -> Rejection:
        one = answer_id(case.id, model, 0)
        return Rejection(stage="answer", reason="fatal", record_kind="answer", record_id=one, source="demo")

    store.put([*cases, make_answer(cases[0], model=model), *(rejection(c) for c in cases)])
    asyncio.run(answer_all(store, iter(cases), ReferenceAnswerer(), settings=Settings()))
    assert store.count().get("rejection", 0) == 0  # case 0's was stale before, 1 and 2's once answered
    assert store.count()["answer"] == 3


def test_a_checked_stage_takes_its_items_as_given_and_grading_still_skips_what_is_done(
    tmp_path: Path,
) -> None:
    from livemed.pipeline.runner import RunOptions, run_stage

    store = _store(tmp_path / "s.db", n=2)
    answers = list(store.iter(Answer))

    async def again(answer: Answer) -> list[Answer]:
        return [answer]

    def stage(checked: bool) -> tuple[int, int]:
        result = asyncio.run(
            run_stage(
                store,
                answers,
                again,
                output_id=lambda a: a.id,
                output_kinds=["answer"],
                options=RunOptions(checked=checked),
            )
        )
        return result.skipped, result.processed

    assert stage(checked=False) == (4, 0)  # every output is stored: the first look skips them
    assert stage(checked=True) == (0, 4)  # the caller looked already: no second look
    _grade_everything(store)
    plan = plan_targets(store, store.iter(Answer))  # without a judge: every answer planned
    rerun = asyncio.run(grade_all(store, plan.targets, JUDGE))
    assert (rerun.seen, rerun.skipped, rerun.written) == (12, 12, {})  # `_pending` looked instead


def test_a_frozen_heap_stage_freezes_once_and_restores_the_collector() -> None:
    import gc

    from livemed.common.heap import GC_YOUNG, frozen_heap

    seen: list[tuple[int, int]] = []

    @frozen_heap
    async def inner() -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))

    @frozen_heap
    async def outer() -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        await inner()
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))  # the inner run left it frozen

    before = gc.get_threshold()
    asyncio.run(outer())
    assert all(count > 0 and young == max(GC_YOUNG, before[0]) for count, young in seen)
    assert len(seen) == 3
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
