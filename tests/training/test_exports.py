"""TRL exports: the GRPO set (both orders, balanced, side by side) and SFT distillation from a teacher."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from livemed.judges.parse import parse_pairwise
from livemed.judges.templates import pairwise_messages
from livemed.models import LLM, Completion, Engine, FatalModelError, Settings
from livemed.models.fake import FakeModel
from livemed.store import Store
from livemed.training.exports import (
    Distilled,
    PairLike,
    distil,
    grpo_rows,
    read_rows,
    shuffled,
    teacher_output,
    write_rows,
)
from livemed.training.judging import parse, render
from tests.training.builders import make_pair, make_pairs, teacher


def test_grpo_rows_hold_both_orders_side_by_side_balanced_and_seeded() -> None:
    pairs = make_pairs(6)
    rows = grpo_rows(pairs, render, seed=3)
    assert len(rows) == 12
    assert Counter(r["gold_verdict"] for r in rows) == {"A": 6, "B": 6}
    for first, second in zip(rows[::2], rows[1::2], strict=True):
        assert first["pair_id"] == second["pair_id"]
        assert (first["order"], second["order"]) == ("original", "swapped")
        assert {first["gold_verdict"], second["gold_verdict"]} == {"A", "B"}
    by_id = {p.id: p for p in pairs}
    for row in rows:
        assert row["prompt"] == pairwise_messages(by_id[row["pair_id"]], row["order"])
        assert set(row) == {"prompt", "gold_verdict", "pair_id", "order", "dataset", "family", "tertile"}
    assert grpo_rows(list(reversed(pairs)), render, seed=3) == rows  # the input order does not matter
    assert [r["pair_id"] for r in grpo_rows(pairs, render, seed=4)] != [r["pair_id"] for r in rows]


def test_write_rows_hashes_what_it_wrote(tmp_path: Path) -> None:
    rows = grpo_rows(make_pairs(2), render)
    first = write_rows(rows, tmp_path / "a.jsonl")
    again = write_rows(rows, tmp_path / "b.jsonl")
    other = write_rows(rows[:2], tmp_path / "c.jsonl")
    assert first.sha256 == again.sha256 != other.sha256
    assert first.rows == 4
    assert read_rows(first.path) == json.loads(json.dumps(rows))


def run_distil(store: Store, model: FakeModel, pairs: Sequence[PairLike], samples: int = 3) -> Distilled:
    async def go() -> Distilled:
        async with Engine(store=store) as engine:
            llm = LLM(engine, model, stage="judges-train")
            return await distil(
                pairs, llm, render, parse, samples=samples, settings=Settings(temperature=1.0)
            )

    return asyncio.run(go())


def test_distil_keeps_pairs_the_teacher_gets_right_in_every_sample_of_both_orders(
    sqlite_store: Store,
) -> None:
    pairs = make_pairs(4)
    model = teacher(wrong_on=frozenset({"q2:1"}))  # one wrong sample (of six) on pair q2
    out = run_distil(sqlite_store, model, pairs)
    assert (out.kept, out.dropped, out.failed) == (3, 1, 0)
    assert len(model.calls) == 4 * 2 * 3
    assert {s.sample for _, s in model.calls} == {0, 1, 2}
    assert len(out.rows) == 6
    assert "pair:medqa:q2:gold>option:C" not in {r["pair_id"] for r in out.rows}
    assert Counter(r["gold_verdict"] for r in out.rows) == {"A": 3, "B": 3}
    for row in out.rows:
        [message] = row["completion"]
        assert message["role"] == "assistant"
        assert parse_pairwise(message["content"]).verdict == row["gold_verdict"]
        assert row["prompt"][0]["role"] == "system"
    assert out.failure_line() is None


def test_distil_again_is_answered_from_the_cache(sqlite_store: Store) -> None:
    pairs = make_pairs(2)
    first = run_distil(sqlite_store, teacher(), pairs)
    model = teacher()
    again = run_distil(sqlite_store, model, pairs)
    assert model.calls == []
    assert again.rows == first.rows


def test_invalid_teacher_output_drops_the_pair() -> None:
    def sloppy(messages, settings):  # type: ignore[no-untyped-def]
        return "I think A is better. [[A]]"

    out = run_distil(None, FakeModel("fake/sloppy", function=sloppy), make_pairs(2), samples=1)  # type: ignore[arg-type]
    assert (out.kept, out.dropped, out.failed) == (0, 2, 0)


def test_failed_calls_are_neither_kept_nor_dropped_and_give_the_failure_line() -> None:
    def flaky(messages, settings):  # type: ignore[no-untyped-def]
        if "Question 1:" in messages[1]["content"]:
            return FatalModelError("400 bad request", status=400)
        return teacher().function(messages, settings)  # type: ignore[misc]

    model = FakeModel("fake/flaky", function=flaky)
    out = run_distil(None, model, make_pairs(3), samples=1)  # type: ignore[arg-type]
    assert (out.kept, out.dropped, out.failed) == (2, 0, 1)
    line = out.failure_line()
    assert line is not None
    assert line.startswith("1 of 3 pairs' teacher calls failed: fatal")
    assert line.endswith("run again to retry them")


def test_reasoning_moved_out_by_the_endpoint_goes_back_into_the_think_block() -> None:
    moved = Completion(text="<answer>[[B]]</answer>", reasoning="B is right", model="m")
    assert teacher_output(moved) == "<think>\nB is right\n</think>\n<answer>[[B]]</answer>"
    assert parse(teacher_output(moved)) == "B"
    plain = Completion(text="<think>x</think><answer>[[A]]</answer>", model="m")
    assert teacher_output(plain) == plain.text


def test_shuffled_is_a_permutation() -> None:
    pairs = [make_pair(i, item=f"i{i}") for i in range(10)]
    assert sorted(p.id for p in shuffled(pairs, 0)) == sorted(p.id for p in pairs)
