"""Every meta-evaluation number on hand-made runs whose verdicts are chosen (docs/judges.md)."""

from __future__ import annotations

import pytest

from livemed.judges.meta import evaluate, games, summarise
from livemed.records import JudgeVerdict


def v(
    pair: str,
    order: str,
    sample: int,
    gold: str,
    verdict: str | None,
    dataset: str = "medqa",
    tertile: str | None = None,
) -> JudgeVerdict:
    family = "decomposable" if dataset in ("pico", "medcalc") else "atomic"
    return JudgeVerdict(
        pair_id=pair,
        dataset=dataset,
        family=family,
        tertile=tertile,
        judge="fake/j",
        order=order,
        sample=sample,
        gold=gold,
        verdict=verdict,
    )


def run(rows: list[tuple[str, str, str, list[str | None]]], **kw: str) -> list[JudgeVerdict]:
    return [v(p, o, i, g, x, **kw) for p, o, g, xs in rows for i, x in enumerate(xs)]


HAND = run(
    [
        ("p1", "original", "A", ["A", "A", "B"]),
        ("p1", "swapped", "B", ["B", None, None]),
        ("p2", "original", "B", ["A", "A", "A"]),
        ("p2", "swapped", "A", ["A", "A", "A"]),
    ]
)


def test_hand_made_run_every_number() -> None:
    s = summarise(games(HAND), "separate")
    assert (s.games, s.samples) == (4, 12)
    assert s.majority == pytest.approx(0.75)
    assert s.any_sample == pytest.approx(0.75)
    assert s.all_sample == pytest.approx(0.25)
    assert s.variance == pytest.approx(0.5)
    assert (s.invalid, s.wrong) == (2, 4)
    assert s.invalid_share == pytest.approx(2 / 6)
    assert s.invalid_games == 0
    assert s.both_orders == 2
    assert s.consistent == pytest.approx(0.5)
    assert s.flip_rate == pytest.approx(0.5)  # p2 chose slot A in both orders


def test_invalid_policies_change_only_the_vote() -> None:
    assert summarise(games(HAND), "half").majority == pytest.approx(0.75)
    wrong = summarise(games(HAND), "wrong")
    assert wrong.majority == pytest.approx(0.5)  # p1 swapped: 1 correct vs 1 wrong + 2 invalid
    assert wrong.consistent == 0.0
    assert wrong.any_sample == pytest.approx(0.75)  # any/all do not depend on the policy


def test_ties_and_all_invalid_games() -> None:
    tie = games(run([("t", "original", "A", ["A", "B"])]))
    assert summarise(tie, "separate").majority == 0.0
    assert summarise(tie, "half").majority == 0.5
    dead = games(run([("d", "original", "A", [None, None])]))
    s = summarise(dead, "separate")
    assert (s.majority, s.invalid_games, s.invalid_share) == (0.0, 1, 1.0)
    assert summarise(dead, "half").majority == 0.5
    assert summarise(dead, "separate").flip_rate is None


def test_always_a_judge_shows_position_bias() -> None:
    rows: list[tuple[str, str, str, list[str | None]]] = []
    for n in range(10):
        gold = "A" if n % 2 == 0 else "B"
        other = "B" if gold == "A" else "A"
        rows += [(f"p{n}", "original", gold, ["A", "A"]), (f"p{n}", "swapped", other, ["A", "A"])]
    s = summarise(games(run(rows)), "separate")
    assert s.majority == pytest.approx(0.5)
    assert s.consistent == 0.0
    assert s.flip_rate == 1.0
    assert s.variance == 0.0


def test_families_average_and_tertiles() -> None:
    verdicts = (
        run([("a1", "original", "A", ["A"]), ("a2", "original", "B", ["A"])], dataset="medqa")
        + run([("b1", "original", "A", ["A"])], dataset="pubmedqa")
        + run([("c1", "original", "A", ["B"])], dataset="medcalc", tertile="hard")
        + run([("c2", "original", "A", ["A"])], dataset="medcalc", tertile="easy")
        + run([("e1", "original", "B", ["B"])], dataset="pico", tertile="easy")
    )
    tables = evaluate(verdicts)
    assert list(tables.datasets) == ["pico", "medcalc", "medqa", "pubmedqa"]
    assert tables.family("atomic", "majority") == pytest.approx((0.5 + 1.0) / 2)
    assert tables.family("decomposable", "majority") == pytest.approx((1.0 + 0.5) / 2)
    assert tables.average("majority") == pytest.approx((1.0 + 0.5 + 0.5 + 1.0) / 4)
    assert tables.tertiles["medcalc"]["hard"].majority == 0.0
    assert tables.tertiles["medcalc"]["easy"].majority == 1.0
    assert tables.tertiles["medcalc"]["medium"].majority is None
    assert tables.tertile_mean("easy") == 1.0
    assert tables.invalid_share() == 0.0  # wrong valid verdicts, no invalid ones
    assert "medqa" not in tables.tertiles
