"""`scores` writes each chunk of scores as it goes, a killed run keeps them, and a re-run does only
what changed (a score newer than every verdict on its answer and than its rubric is kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.grade.grader import grade_id
from livemed.records import Answer, Case, Grade, Rubric, Score
from livemed.score import stage as scoring
from livemed.score.stage import score_all
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric

JUDGE = "offline/lexical"


def _graded_store(path: Path, n: int = 9) -> Store:
    store = Store(path)
    records: list[Case | Rubric | Answer | Grade] = []
    for i in range(n):
        case = make_case(f"demo:{i}")
        rubric = make_rubric(case)
        answer = make_answer(case)
        records += [case, rubric, answer]
        records += [
            Grade(answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge=JUDGE, met=(i + k) % 2 == 0)
            for k, c in enumerate(rubric.criteria)
        ]
    store.put(records)
    return store


def _scores(store: Store) -> dict[str, float]:
    return {s.answer_id: s.score for s in store.iter(Score)}


def test_a_killed_scores_keeps_its_chunks_and_the_rerun_finishes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = _graded_store(tmp_path / "reference.db")
    expected = _scores_after(reference)
    store = _graded_store(tmp_path / "store.db")
    real_put = Store.put
    calls: list[int] = []

    def put_then_interrupt(self: Store, records, **kw):  # type: ignore[no-untyped-def]
        written = real_put(self, records, **kw)
        calls.append(written)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C (or SIGTERM) right after the second chunk is written
        return written

    monkeypatch.setattr(Store, "put", put_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        score_all(store, JUDGE, batch_size=4)
    monkeypatch.setattr(Store, "put", real_put)
    kept = _scores(store)
    assert len(kept) == 8  # two chunks of four answers were written before the interruption
    written_at = store.updated_at("score", [s.id for s in store.iter(Score)])

    scored: list[str] = []
    real_verdicts = scoring.verdicts_by_answer

    def counting(store_: Store, answer_ids, judge):  # type: ignore[no-untyped-def]
        scored.extend(answer_ids)
        return real_verdicts(store_, answer_ids, judge)

    monkeypatch.setattr(scoring, "verdicts_by_answer", counting)
    run = score_all(store, JUDGE, batch_size=4)
    assert len(scored) == 1  # only the answer the killed run had not reached was scored again
    assert store.updated_at("score", list(written_at)) == written_at  # the kept scores were not rewritten
    assert _scores(store) == expected
    assert sorted(s.answer_id for s in run.scores) == sorted(expected)
    assert run.answers == {"fake/candidate": 9}


def _scores_after(store: Store) -> dict[str, float]:
    score_all(store, JUDGE, batch_size=4)
    return _scores(store)


def test_a_verdict_written_after_its_score_is_scored_again(tmp_path: Path) -> None:
    store = _graded_store(tmp_path / "store.db", n=3)
    score_all(store, JUDGE)
    before = _scores(store)
    answer = store.get(Answer, make_answer(make_case("demo:1")).id)
    assert answer is not None
    rubric = store.get(Rubric, f"rubric:{answer.case_id}")
    assert rubric is not None
    positive = rubric.criteria[0]
    old = store.get(Grade, grade_id(answer.id, positive.id, JUDGE))
    assert old is not None
    store.put([old.model_copy(update={"met": not old.met})])  # the judge's verdict changed
    run = score_all(store, JUDGE)
    after = _scores(store)
    assert after[answer.id] != before[answer.id]
    assert {k: v for k, v in after.items() if k != answer.id} == {
        k: v for k, v in before.items() if k != answer.id
    }
    assert len(run.scores) == 3


def test_a_rubric_rewritten_after_the_score_is_scored_again(tmp_path: Path) -> None:
    store = _graded_store(tmp_path / "store.db", n=2)
    score_all(store, JUDGE)
    first = store.updated_at("score", [s.id for s in store.iter(Score)])
    rubric = store.get(Rubric, "rubric:case:demo:0")
    assert rubric is not None
    store.put([rubric])  # rewritten (e.g. re-imported with --replace)
    score_all(store, JUDGE)
    second = store.updated_at("score", list(first))
    changed = {k for k in first if second[k] != first[k]}
    assert changed == {f"score:{make_answer(make_case('demo:0')).id}:{JUDGE}:livemed"}
