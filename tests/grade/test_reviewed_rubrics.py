"""`grade --rubric-version latest-approved`: the planner sees each case's newest reviewed criteria, so only
a criterion a reviewer wrote is graded; the writer's grades stay, and a second run calls nothing."""

from __future__ import annotations

from livemed.common.prompts import parse_blocks
from livemed.grade.criterion_ids import chosen_criterion_ids
from livemed.grade.grader import grade_id
from livemed.grade.stage import plan_stream, plan_targets
from livemed.models.fake import FakeModel
from livemed.records import Answer, Grade
from livemed.store import Store
from tests.builders import EDITED, REVIEW_CRITERIA, WORDS, grade_words, review, reviewable_store, word_grader

JUDGE = WORDS


def _graded_pairs(model: FakeModel, start: int) -> list[tuple[str, str]]:
    pairs = []
    for messages, _ in model.calls[start:]:
        blocks = {b.name: b.text for b in parse_blocks(messages[-1]["content"])}
        pairs.append((blocks["criterion"], blocks["response"]))
    return sorted(pairs)


def test_only_the_edited_criterion_is_graded_and_a_rerun_calls_nothing(any_store: Store) -> None:
    answers = reviewable_store(any_store)
    model = FakeModel(JUDGE, function=word_grader)
    assert grade_words(any_store, model, "writer") == (12, 12, 0)  # 4 answers x 3 writer criteria
    writer_grades = {g.id: g for g in any_store.iter(Grade)}
    review(any_store)

    start = len(model.calls)
    # case 0's 2 answers are planned with their 2 reviewed criteria, but only the edited one is sent (the
    # kept one is graded already); case 1 was only approved: its 2 x 3 criteria are done
    assert grade_words(any_store, model, "latest-approved") == (2, 4, 6)
    case0 = sorted(a.text for a in answers if a.case_id == "case:demo:0")
    assert _graded_pairs(model, start) == [(EDITED.text, text) for text in case0]
    assert grade_words(any_store, model, "latest-approved") == (0, 0, 10)  # a second run pays nothing
    assert grade_words(any_store, model, "writer") == (0, 0, 12)  # the writer's rubrics are graded still

    stored = {g.id: g for g in any_store.iter(Grade)}
    assert {i: stored[i] for i in writer_grades} == writer_grades  # no writer grade rewritten or lost
    edited = {i: g for i, g in stored.items() if i not in writer_grades}
    assert sorted(edited) == sorted(grade_id(a.id, EDITED.id, JUDGE) for a in answers if "demo:0" in a.id)
    assert {g.met for g in edited.values()} == {True}  # colchicine, urgent: each answer has a word of it


def test_the_criterion_ids_and_targets_are_the_reviewed_ones(any_store: Store) -> None:
    reviewable_store(any_store)
    review(any_store)
    first, second, third = REVIEW_CRITERIA
    writer_ids = [first.id, second.id, third.id]
    case_ids = ["case:demo:0", "case:demo:1"]
    assert chosen_criterion_ids(any_store, case_ids) == {
        "rubric:case:demo:0": writer_ids,
        "rubric:case:demo:1": writer_ids,
    }
    assert chosen_criterion_ids(any_store, case_ids, "latest-approved") == {
        "rubric:case:demo:0": [EDITED.id, third.id],
        "rubric:case:demo:1": writer_ids,
    }
    listed = plan_targets(any_store, any_store.iter(Answer), rubric_version="latest-approved")
    streamed = plan_stream(any_store, any_store.iter(Answer), judge=JUDGE, rubric_version="latest-approved")
    for targets in (listed.targets, list(streamed.targets)):
        criteria = {t.answer.case_id: [c.text for c in t.rubric.criteria] for t in targets}
        assert criteria == {
            "case:demo:0": [EDITED.text, third.text],
            "case:demo:1": [c.text for c in REVIEW_CRITERIA],
        }
    writer = plan_targets(any_store, any_store.iter(Answer))
    assert {len(t.rubric.criteria) for t in writer.targets} == {3}  # the writer's rubric, unchanged
