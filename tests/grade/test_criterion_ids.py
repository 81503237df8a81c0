"""The criterion ids of stored rubrics, kept in run state while a rubric is not written again.

`grade`'s plan reads a rubric's payload once; later runs take its criterion ids from run state as
long as the rubric's write time is the one they were made from. A rubric written again, with other
criteria, is read again, and its answers are planned for the new criterion.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa

from livemed.answer.stage import stored_answers
from livemed.grade.criterion_ids import NAMESPACE, criterion_ids
from livemed.grade.lexical import LexicalGrader
from livemed.grade.stage import grade_all, plan_stream, plan_targets
from livemed.records import Answer, Criterion, Rubric
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric

JUDGE = LexicalGrader()


def _store(path: Path, n: int = 5) -> Store:
    store = Store(path)
    for i in range(n):
        case = make_case(f"demo:{i}")
        store.put([case, make_rubric(case), make_answer(case), make_answer(case, model="ollama:llama3:8b")])
    return store


def _expected(store: Store) -> dict[str, list[str]]:
    return {rubric.id: [c.id for c in rubric.criteria] for rubric in store.iter(Rubric)}


def _statements(store: Store) -> list[str]:
    seen: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def test_the_ids_are_each_rubrics_criteria_first_from_the_payload_then_from_run_state(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    asked = [*sorted(_expected(store)), "rubric:case:demo:missing"]
    first = criterion_ids(store, asked)
    assert first == _expected(store)
    assert set(store.state_items(NAMESPACE)) == set(_expected(store))
    seen = _statements(store)
    assert criterion_ids(store, asked) == first
    assert seen
    assert not any("payload" in statement for statement in seen)  # no rubric was read


def test_a_rubric_written_again_is_read_again_and_its_answers_are_planned(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db")
    plan = plan_targets(store, store.iter(Answer), judge=JUDGE.id)
    asyncio.run(grade_all(store, plan.targets, JUDGE, done=plan.done))
    assert plan_stream(store, stored_answers(store), judge=JUDGE.id).targets.ids == []  # ids kept
    old = make_rubric(make_case("demo:3"))
    new = Criterion(text="Advises rest and ice", polarity="positive", axis="accuracy", weight=2)
    store.put([make_rubric(make_case("demo:3"), [*old.criteria, new])])
    assert criterion_ids(store, [old.id])[old.id] == [*(c.id for c in old.criteria), new.id]
    again = plan_stream(store, stored_answers(store), judge=JUDGE.id)
    to_case_3 = sorted(a.id for a in store.iter(Answer) if a.case_id == "case:demo:3")
    assert (sorted(again.targets.ids), again.pending) == (to_case_3, 2 * 4)


def test_an_entry_that_was_not_made_from_the_stored_rubric_is_not_used(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db", n=3)
    ids = sorted(_expected(store))
    criterion_ids(store, ids)
    kept = store.state_items(NAMESPACE)
    store.state_set_many(
        NAMESPACE,
        {
            ids[0]: {"written": "2001-01-01T00:00:00", "ids": kept[ids[0]]["ids"] + " 000000000000"},
            ids[1]: {"written": kept[ids[1]]["written"], "ids": ["not", "a", "string"]},
            ids[2]: "garbage",
        },
    )
    assert criterion_ids(store, ids) == _expected(store)
    assert store.state_items(NAMESPACE) == kept  # and the entries were made again
