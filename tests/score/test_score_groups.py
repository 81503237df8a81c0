"""`score_all` scores an answer from its rubric's index groups and reads the rubric through a view of
its fields; both give exactly the Score the Item functions give (the way scores were made before).

The oracle below is that earlier way: `S.Item`s, `S.case_score`, `S.per_axis`, `S.per_theme`,
`S.per_tag`, `S.coverage`, `S.harm` on the validated Rubric. Random rubrics, native and imported
(negative and fractional points, repeated tags, themes, axes), random verdicts with failures, both
conventions and both failure policies, compared field by field with `==` (the same floats)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from livemed.interop.healthbench import criterion_tags, example_tags_of, is_imported, parse_example
from livemed.records import Answer, Criterion, Grade, GradeFailure, Rubric, Score
from livemed.score import formula as S
from livemed.score import stage as scoring
from livemed.score.rows import ScoreRow
from livemed.store import Store

DAY = datetime(2025, 5, 7, tzinfo=UTC)
AXES = ("accuracy", "completeness", "communication", "context_awareness", "safety")
TAGS = ("axis:accuracy", "axis:completeness", "level:example", "level:cluster", "cluster:x")
THEMES = ("Emergency_Referrals", "medication safety", "Hedging", None)


def oracle(
    answer: Answer,
    rubric: Rubric,
    verdicts: dict[str, bool | None],
    convention: S.Convention,
    policy: S.FailurePolicy,
) -> dict[str, Any] | None:
    """The Score fields as `score.stage` made them before index groups (the Item functions)."""
    own = not is_imported(rubric)
    if any(c.id not in verdicts for c in rubric.criteria):
        return None
    items = [
        S.Item(c.value, verdicts[c.id], axis=c.axis if own else "", theme=c.theme, tags=tuple(c.tags))
        for c in rubric.criteria
    ]
    value = S.case_score(items, convention, policy)
    if value is None:
        return None
    per_tag: dict[str, float] = {}
    if convention == "healthbench":
        per_theme = dict.fromkeys(rubric.themes, value)
        tagged = [
            replace(item, tags=tuple(criterion_tags(c, imported=not own)))
            for item, c in zip(items, rubric.criteria, strict=True)
        ]
        per_tag = S.per_tag(tagged, example_tags_of(rubric), convention, policy)
    else:
        per_theme = S.per_theme(items, convention, policy)
    return {
        "score": value,
        "per_axis": S.per_axis(items, convention, policy),
        "per_theme": per_theme,
        "per_tag": per_tag,
        "coverage": S.coverage(items, policy) or 0.0,
        "harm": S.harm(items, policy) or 0.0,
        "published": rubric.published,
    }


def _fields(score: Score | ScoreRow) -> dict[str, Any]:
    return {
        "score": score.score,
        "per_axis": score.per_axis,
        "per_theme": score.per_theme,
        "per_tag": score.per_tag,
        "coverage": score.coverage,
        "harm": score.harm,
        "published": score.published,
    }


def _native(rng: random.Random, n: int) -> Rubric:
    criteria = []
    for i in range(n):
        weight = rng.choice([w for w in range(-10, 11) if w != 0])
        tags = rng.sample(TAGS, rng.randint(0, 3))
        if rng.random() < 0.2 and tags:
            tags.append(tags[0])  # a repeated tag counts twice in its group, as before
        criteria.append(
            Criterion(
                text=f"criterion {i} {rng.random()}",
                polarity="positive" if weight > 0 else "negative",
                axis=rng.choice(AXES),
                weight=weight,
                theme=rng.choice(THEMES),
                points=rng.choice([None, None, weight * 0.37, float(weight)]),
                tags=tags,
            )
        )
    themes = rng.sample(["Emergency referrals", "medication_safety", "hedging", "x"], rng.randint(0, 3))
    return Rubric(case_id=f"case:{rng.random()}", criteria=criteria, themes=themes, published=DAY)


def _imported(rng: random.Random, n: int) -> Rubric:
    rubrics = []
    for i in range(n):
        points = rng.choice([-8, -2.5, 1, 2.5, 5, 10])
        rubrics.append({"criterion": f"item {i} {rng.random()}", "points": points})
        rubrics[-1]["tags"] = rng.sample(TAGS, rng.randint(0, 3))
    example = {
        "prompt_id": f"hb-{rng.random()}",
        "prompt": [{"role": "user", "content": "What should I do?"}],
        "rubrics": rubrics,
        "example_tags": rng.sample(["theme:emergency_referrals", "level:example", "physician_agreed"], 2),
    }
    try:
        return parse_example(example, published=DAY, date_field="option")[1]
    except ValueError:  # e.g. no positive points: not importable, another draw
        return _imported(rng, n)


def _verdicts(rng: random.Random, rubric: Rubric) -> dict[str, bool | None]:
    return {c.id: rng.choice([True, False, True, None]) for c in rubric.criteria}


@pytest.mark.parametrize("convention", S.CONVENTIONS)
@pytest.mark.parametrize("policy", S.POLICIES)
def test_index_groups_give_the_item_functions_scores(
    convention: S.Convention, policy: S.FailurePolicy
) -> None:
    rng = random.Random(f"{convention}-{policy}")
    compared = 0
    for draw in range(300):
        rubric = (_native if draw % 2 else _imported)(rng, rng.randint(1, 9))
        answer = Answer(case_id=rubric.case_id, model="m", text="x")
        verdicts = _verdicts(rng, rubric)
        expected = oracle(answer, rubric, verdicts, convention, policy)
        prepared = scoring._Prepared.of(rubric)
        met = prepared.verdicts(verdicts)
        assert met is not None
        got = scoring._score(
            answer, prepared, met, judge="j", failures=0, convention=convention, policy=policy
        )
        if expected is None:
            assert got is None
            continue
        assert got is not None
        assert _fields(got) == expected
        assert list(got.per_axis) == list(expected["per_axis"])  # the same key order (stored JSON)
        assert list(got.per_tag) == list(expected["per_tag"])
        compared += 1
    assert compared > 200


def test_a_missing_verdict_leaves_the_answer_unscored() -> None:
    rubric = _native(random.Random(1), 3)
    prepared = scoring._Prepared.of(rubric)
    verdicts: dict[str, bool | None] = {c.id: True for c in rubric.criteria[:2]}
    assert prepared.verdicts(verdicts) is None
    assert prepared.items(verdicts) is None


def test_the_stored_rubric_view_prepares_as_the_whole_record(tmp_path: Any) -> None:
    rng = random.Random(7)
    rubrics = [(_native if i % 2 else _imported)(rng, rng.randint(1, 8)) for i in range(60)]
    with Store(tmp_path / "livemed.db") as store:
        store.put(rubrics)
        views = dict(store.fields_many(Rubric.kind, [r.id for r in rubrics], scoring._RUBRIC))
    for rubric in rubrics:
        assert scoring._Prepared.of_view(views[rubric.id]) == scoring._Prepared.of(rubric)


def test_score_all_stores_the_oracle_scores(tmp_path: Any) -> None:
    """End to end through the store: every stored Score equals the oracle's, and an answer with a
    failed call (GradeFailure call_failed) gets none."""
    rng = random.Random(11)
    rubrics = [(_native if i % 2 else _imported)(rng, rng.randint(1, 8)) for i in range(40)]
    answers, grades, verdicts_of = [], [], {}
    for rubric in rubrics:
        answer = Answer(case_id=rubric.case_id, model="m", text="x")
        answers.append(answer)
        verdicts = _verdicts(rng, rubric)
        verdicts_of[answer.id] = verdicts
        for c in rubric.criteria:
            met = verdicts[c.id]
            common = {"answer_id": answer.id, "case_id": answer.case_id, "criterion_id": c.id, "judge": "j"}
            grades.append(
                Grade(**common, met=met) if met is not None else GradeFailure(**common, reason="unparsable")
            )
    with Store(tmp_path / "livemed.db") as store:
        store.put([*rubrics, *answers, *grades])
        for convention in S.CONVENTIONS:
            for policy in S.POLICIES:
                run = scoring.score_all(
                    store, "j", convention=convention, policy=policy, batch_size=7, max_failure_share=1.0
                )
                by_answer = {s.answer_id: s for s in run.scores}
                for rubric, answer in zip(rubrics, answers, strict=True):
                    expected = oracle(answer, rubric, verdicts_of[answer.id], convention, policy)
                    if policy == "strict" and None in verdicts_of[answer.id].values():
                        expected = None  # an unusable verdict: the answer is not graded
                    if expected is None:
                        assert answer.id not in by_answer
                    else:
                        assert _fields(by_answer[answer.id]) == expected
