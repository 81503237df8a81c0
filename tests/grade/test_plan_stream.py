"""`plan_stream`: the targets `grade` plans over a whole store, kept as ids and read chunk by chunk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from livemed.grade.grader import grade_id
from livemed.grade.lexical import LexicalGrader
from livemed.grade.stage import TargetStream, grade_all, plan_stream, plan_targets
from livemed.records import Answer, Grade
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric


def _store(path: Path, n: int = 3) -> Store:
    store = Store(path)
    for i in range(n):
        case = make_case(f"demo:{i:04d}")
        store.put([case, make_rubric(case), make_answer(case), make_answer(case, "", model="fake/other")])
    return store


def test_the_stream_plans_what_the_list_plans(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    orphan = make_answer(make_case("demo:gone"))  # its case was never stored
    store.put([orphan])
    judge = LexicalGrader()
    listed = plan_targets(store, store.iter(Answer), judge=judge.id)
    streamed = plan_stream(store, store.iter(Answer), judge=judge.id)
    assert isinstance(streamed.targets, TargetStream)
    assert streamed.items("per-criterion") == listed.items("per-criterion") == 18
    assert streamed.items("batched") is None
    assert [t.answer.id for t in streamed.targets] == [t.answer.id for t in listed.targets]
    assert [t.rubric for t in streamed.targets] == [t.rubric for t in listed.targets]
    assert streamed.skipped == listed.skipped == {"case missing": 1}


def test_targets_are_read_as_they_are_iterated_not_when_planned(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db", n=600)  # 1,200 answers: three chunks of 500
    plan = plan_stream(store, store.iter(Answer), judge=LexicalGrader().id)
    targets = iter(plan.targets)
    first = next(targets)
    assert first.answer.case_id == "case:demo:0000"
    # Two cases deleted after planning, once the first chunk (answers of cases 0–249) was read: the
    # answers of the one in a later chunk are not graded, those of the one already read are.
    store.delete("case", ["case:demo:0100", "case:demo:0599"])
    rest = [t.answer.case_id for t in targets]
    assert len(rest) == 1200 - 1 - 2
    assert plan.skipped == {"case missing": 2}
    assert "case:demo:0100" in rest
    assert "case:demo:0599" not in rest


def test_grading_a_stream_writes_every_grade_and_a_rerun_plans_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    judge = LexicalGrader()
    plan = plan_stream(store, store.iter(Answer), judge=judge.id)
    result = asyncio.run(grade_all(store, plan.targets, judge, done=plan.done))
    assert result.written["grade"] == 18
    assert result.call_failed == 0
    again = plan_stream(store, store.iter(Answer), judge=judge.id)
    assert (again.done, again.pending, list(again.targets)) == (18, 0, [])


def test_an_interrupted_stream_resumes_without_grading_twice(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    judge = LexicalGrader()
    first = next(iter(plan_stream(store, store.iter(Answer), judge=judge.id).targets))
    one = first.rubric.criteria[0]
    asyncio.run(grade_all(store, [first], judge))  # as if a killed run had written one answer's grades
    kept = store.get(Grade, grade_id(first.answer.id, one.id, judge.id))
    assert kept is not None
    plan = plan_stream(store, store.iter(Answer), judge=judge.id)
    assert (plan.done, plan.pending) == (3, 15)
    result = asyncio.run(grade_all(store, plan.targets, judge, done=plan.done))
    assert (result.written["grade"], result.skipped) == (15, 3)
    assert store.get(Grade, kept.id) == kept  # not written again
