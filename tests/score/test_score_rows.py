"""`score_all` keeps a compact `ScoreRow` of each score it writes or keeps: every row reads as the stored
Score record it stands for (field by field, the same floats, the dicts' key order too), on the first
run and on a re-run that reads the stored scores back, and the tables computed from rows are the
tables computed from the records."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from livemed.analysis.leaderboard import breakdown, scores_table
from livemed.records import Answer, Grade, GradeFailure, Score
from livemed.score import formula as S
from livemed.score.rows import RowMaker, ScoreRow
from livemed.score.stage import score_all
from livemed.store import Store
from tests.score.test_score_groups import _imported, _native, _verdicts

MODELS = ("m/a", "m/b")


def _read(score: Score | ScoreRow) -> dict[str, Any]:
    """Everything a consumer of a scoring run reads of a score, dict key order included."""
    return {
        "id": score.id,
        "answer_id": score.answer_id,
        "case_id": score.case_id,
        "model": score.model,
        "judge": score.judge,
        "convention": score.convention,
        "failure_policy": score.failure_policy,
        "rubric_version": score.rubric_version,
        "score": score.score,
        "coverage": score.coverage,
        "harm": score.harm,
        "failures": score.failures,
        "published": score.published,
        "per_axis": list(score.per_axis.items()),
        "per_theme": list(score.per_theme.items()),
        "per_tag": list(score.per_tag.items()),
    }


def _graded_store(path: Path) -> Store:
    """Random native and imported rubrics, two models' answers, random verdicts with unusable ones."""
    rng = random.Random(5)
    rubrics = [(_native if i % 2 else _imported)(rng, rng.randint(1, 8)) for i in range(30)]
    answers, grades = [], []
    for rubric in rubrics:
        for model in MODELS:
            answer = Answer(case_id=rubric.case_id, model=model, text="x")
            answers.append(answer)
            for criterion_id, met in _verdicts(rng, rubric).items():
                common = {"answer_id": answer.id, "case_id": answer.case_id, "criterion_id": criterion_id}
                grades.append(
                    Grade(**common, judge="j", met=met)
                    if met is not None
                    else GradeFailure(**common, judge="j", reason="unparsable")
                )
    store = Store(path)
    store.put([*rubrics, *answers, *grades])
    return store


@pytest.mark.parametrize("convention", S.CONVENTIONS)
@pytest.mark.parametrize("policy", S.POLICIES)
def test_each_row_reads_as_its_stored_record_first_and_again(
    tmp_path: Path, convention: S.Convention, policy: S.FailurePolicy
) -> None:
    with _graded_store(tmp_path / "livemed.db") as store:
        first = score_all(store, "j", convention=convention, policy=policy, batch_size=7, max_failure_share=1)
        again = score_all(store, "j", convention=convention, policy=policy, batch_size=7, max_failure_share=1)
        stored = store.get_many(Score, [row.id for row in first.scores])
        assert len(first.scores) >= 10  # strict leaves the answers with an unusable verdict out
        assert len(stored) == len(first.scores)
        assert [_read(row) for row in first.scores] == [_read(stored[row.id]) for row in first.scores]
        assert [_read(row) for row in again.scores] == [_read(row) for row in first.scores]  # read back


@pytest.mark.parametrize("convention", S.CONVENTIONS)
def test_tables_from_rows_are_the_tables_from_records(tmp_path: Path, convention: S.Convention) -> None:
    with _graded_store(tmp_path / "livemed.db") as store:
        rows = score_all(store, "j", convention=convention, policy="not-met", max_failure_share=1).scores
        found = store.get_many(Score, [row.id for row in rows])
        records = [found[row.id] for row in rows]
    assert scores_table(rows, convention, seed=3, resamples=200) == scores_table(
        records, convention, seed=3, resamples=200
    )
    for by in ("axis", "theme", "tag"):
        ours = breakdown(rows, by, convention, seed=3, resamples=200)
        assert ours == breakdown(records, by, convention, seed=3, resamples=200)


def test_rows_of_one_shape_model_and_day_share_them() -> None:
    day = datetime(2025, 5, 7, tzinfo=UTC)
    maker = RowMaker()
    made = [
        maker.row(
            Score(
                answer_id=f"answer:{i}", case_id="case:1", model="".join(["m/", "a"]), judge="j", score=0.5,
                per_axis={"accuracy": 0.5, "safety": 1.0}, coverage=0.5, harm=0.0,
                published=day + timedelta(0),
            )
        )
        for i in range(3)
    ]  # fmt: skip
    assert made[0].shape is made[1].shape is made[2].shape
    assert made[0].model is made[1].model
    assert made[0].published is made[2].published
    assert made[2].per_axis == {"accuracy": 0.5, "safety": 1.0}
    assert made[2].per_tag == {}


def test_the_same_instant_in_another_zone_keeps_its_zone() -> None:
    maker = RowMaker()
    utc = datetime(2025, 5, 7, 12, tzinfo=UTC)
    paris = utc.astimezone(timezone(timedelta(hours=2)))
    rows = [
        maker.row(Score(answer_id=f"a{i}", case_id="c", model="m", judge="j", score=1.0, coverage=1.0,
                        harm=0.0, published=day))
        for i, day in enumerate((utc, paris))
    ]  # fmt: skip
    assert [row.published.isoformat() for row in rows if row.published] == [
        utc.isoformat(),
        paris.isoformat(),
    ]
