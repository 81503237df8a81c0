"""Grading's claim keys: per criterion an answer's criteria share one claim key, and the look after
claiming (`GradeJob.done_ids`) finds by answer what the lookup by grade id finds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from livemed.grade.grader import grade_id
from livemed.grade.lexical import LexicalGrader
from livemed.grade.stage import GradeJob, _settled, grade_all, plan_targets
from livemed.records import CALL_FAILED, Answer, GradeFailure
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric


def _graded_store(path: Path) -> tuple[Store, list[str]]:
    """Three answers of three criteria, graded; then one grade left as an unparsable verdict, one as a
    failed call and one missing: the three grade ids that are not Grades, in that order."""
    store = Store(path)
    for i in range(3):
        case = make_case(f"demo:{i}")
        store.put([case, make_rubric(case), make_answer(case)])
    judge = LexicalGrader()
    plan = plan_targets(store, store.iter(Answer), judge=judge.id)
    asyncio.run(grade_all(store, plan.targets, judge))
    changed = []
    for target, reason in zip(plan.targets, ["unparsable", CALL_FAILED, None], strict=True):
        criterion = target.rubric.criteria[1]
        gid = grade_id(target.answer.id, criterion.id, judge.id)
        store.delete("grade", [gid])
        if reason is not None:
            store.put(
                [
                    GradeFailure(
                        answer_id=target.answer.id,
                        case_id=target.case.id,
                        criterion_id=criterion.id,
                        judge=judge.id,
                        reason=reason,
                    )
                ]
            )
        changed.append(gid)
    return store, changed


@pytest.mark.parametrize("mode", ["per-criterion", "batched"])
@pytest.mark.parametrize("retry_failures", [False, True])
def test_the_look_by_answer_finds_what_the_look_by_id_finds(
    tmp_path: Path, mode: str, retry_failures: bool
) -> None:
    store, (unparsable, failed, missing) = _graded_store(tmp_path / "s.db")
    judge = LexicalGrader()
    job = GradeJob(store, judge, mode, retry_failures)  # type: ignore[arg-type]
    targets = plan_targets(store, store.iter(Answer)).targets  # every answer, every criterion
    items = (
        [(t, [c]) for t in targets for c in t.rubric.criteria]
        if mode == "per-criterion"
        else [(t, list(t.rubric.criteria)) for t in targets]
    )
    ids = [one for item in items for one in job.output_id(item)]
    grades = [one for one in ids if one.startswith("grade:")]
    assert len(grades) == 9
    assert len(ids) > 9
    assert job._answer_of(ids[0]) == items[0][0].answer.id  # looked up by answer, not one by one
    done = job.done_ids(ids)
    assert done == _settled(store, grades, retry_failures)
    expected = set(grades) - {failed, missing} - ({unparsable} if retry_failures else set())
    assert done == expected  # an unparsable verdict is done unless retried; a failed call never


def test_an_answers_criteria_share_one_claim_key_per_judge(tmp_path: Path) -> None:
    store, _ = _graded_store(tmp_path / "s.db")
    target = plan_targets(store, store.iter(Answer)).targets[0]
    job = GradeJob(store, LexicalGrader())
    keys = {job.output_id((target, [c]))[0] for c in target.rubric.criteria}
    assert keys == {f"grade-answer:{target.answer.id}:{LexicalGrader().id}"}
    other = GradeJob(store, LexicalGrader(), "batched")
    assert other.output_id((target, list(target.rubric.criteria)))[0].startswith("grade-batch:")
