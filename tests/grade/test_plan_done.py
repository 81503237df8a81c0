"""`plan_targets` with a judge: fully graded answers are counted as done without being planned."""

from __future__ import annotations

import asyncio
from pathlib import Path

from livemed.grade.grader import grade_id
from livemed.grade.lexical import LexicalGrader
from livemed.grade.stage import grade_all, plan_targets
from livemed.records import Answer, GradeFailure
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric


def _store(path: Path) -> Store:
    store = Store(path)
    for i in range(3):
        case = make_case(f"demo:{i}")
        store.put([case, make_rubric(case), make_answer(case)])
    return store


def test_a_graded_store_plans_nothing_and_counts_every_criterion_done(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    judge = LexicalGrader()
    first = plan_targets(store, store.iter(Answer), judge=judge.id)
    assert (len(first.targets), first.done, first.items("per-criterion")) == (3, 0, 9)
    result = asyncio.run(grade_all(store, first.targets, judge))
    assert result.written == {"grade": 9}
    again = plan_targets(store, store.iter(Answer), judge=judge.id)
    assert (again.targets, again.done, again.items("per-criterion")) == ([], 9, 9)
    rerun = asyncio.run(grade_all(store, again.targets, judge, done=again.done))
    assert (rerun.seen, rerun.skipped, rerun.written) == (9, 9, {})
    assert len(plan_targets(store, store.iter(Answer)).targets) == 3  # without a judge: every answer


def test_a_failure_left_beside_its_grade_is_removed_and_an_unparsable_one_counts_done(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    judge = LexicalGrader()
    plan = plan_targets(store, store.iter(Answer), judge=judge.id)
    asyncio.run(grade_all(store, plan.targets, judge))
    target = plan.targets[0]
    criterion = target.rubric.criteria[0]
    stale = GradeFailure(
        answer_id=target.answer.id,
        case_id=target.case.id,
        criterion_id=criterion.id,
        judge=judge.id,
        reason="unparsable",
    )
    store.put([stale])  # a run stopped between writing the Grade and its clean-up
    plan_targets(store, store.iter(Answer), judge=judge.id)
    assert store.has("grade_failure", [stale.id]) == set()
    store.delete("grade", [grade_id(target.answer.id, criterion.id, judge.id)])
    store.put([stale])  # now the verdict was unparsable: a result, not graded again by default
    assert plan_targets(store, store.iter(Answer), judge=judge.id).done == 9
    retry = plan_targets(store, store.iter(Answer), judge=judge.id, retry_failures=True)
    assert (len(retry.targets), retry.done) == (1, 6)
