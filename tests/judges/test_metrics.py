"""Metric tables by hand (PICO macro-F1 edge cases, MedCalc error and correctness rules), and the
MedCalc formulas against rows of the real data."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from livemed.errors import InputFileError
from livemed.judges import calculators as C
from livemed.judges.datasets import dataset
from livemed.judges.datasets.items import CalcItem
from livemed.judges.metrics import key_f1, medcalc_correct, normalise_span, pico_macro_f1, squared_error
from livemed.judges.mutations import candidates


def calc(cid: int, answer: str, lower: str, upper: str, output: str = "decimal") -> CalcItem:
    return CalcItem("1", cid, "x", output, "note", "q?", {}, answer, lower, upper)


@pytest.mark.parametrize(
    ("cand", "gold", "f1"),
    [
        ([], [], 1.0),
        (["a"], [], 0.0),
        ([], ["a"], 0.0),
        (["Adults, with asthma!"], ["adults with   asthma"], 1.0),
        (["a", "b"], ["a"], 2 * 0.5 * 1 / 1.5),
        (["x"], ["a"], 0.0),
        (["a", "a"], ["a"], 1.0),  # a set per key
        ([".,;"], [], 1.0),  # a span that normalises to nothing is dropped
    ],
)
def test_key_f1_by_hand(cand: list[str], gold: list[str], f1: float) -> None:
    assert key_f1(cand, gold) == pytest.approx(f1)


def test_macro_f1_is_the_mean_over_four_keys() -> None:
    gold = {"P": ["adults"], "I": ["aspirin"], "C": [], "O": ["pain", "fever"]}
    cand = {"P": ["Adults."], "I": ["placebo"], "O": ["pain"]}  # C missing = empty, like gold
    assert pico_macro_f1(cand, gold) == pytest.approx((1 + 0 + 1 + 2 / 3) / 4)
    assert normalise_span("  Low-dose  (ASA) ") == "low dose asa"


def test_medcalc_rules_by_hand() -> None:
    decimal = calc(2, "25.238", "23.9761", "26.4999")
    assert medcalc_correct(decimal, "26.4")
    assert not medcalc_correct(decimal, "26.6")
    assert squared_error(decimal, "26.238") == pytest.approx(1.0)
    assert squared_error(decimal, "n/a") == math.inf
    negative = calc(63, "-4.0", "-3.8", "-4.2")
    assert medcalc_correct(negative, "-4.1")
    score = calc(4, "3", "3", "3", "integer")
    assert medcalc_correct(score, "3.4")
    assert not medcalc_correct(score, "3.6")
    due = calc(13, "09/23/2014", "09/23/2014", "09/23/2014", "date")
    assert medcalc_correct(due, "09/23/2014")
    assert not medcalc_correct(due, "09/24/2014")
    assert squared_error(due, "09/26/2014") == 9.0
    age = calc(69, "('4 weeks', '2 days')", "", "", "integer")
    assert medcalc_correct(age, "(4 weeks, 2 days)")
    assert not medcalc_correct(age, "('4 weeks', '3 days')")
    assert squared_error(age, "('5 weeks', '2 days')") == 49.0


def _rows(shared_data: Path) -> list[CalcItem]:
    found = dataset("medcalc").load(shared_data / "medcalc_bench")
    return [i for i in found if not isinstance(i, InputFileError) and isinstance(i, CalcItem)]


def test_formulas_reproduce_the_benchmark_rows(shared_data: Path) -> None:
    checked = 0
    for item in _rows(shared_data):
        if item.calculator_id not in C.FORMULAS:
            continue
        try:
            value = C.compute(item.calculator_id, item.entities)
        except C.Unsupported:
            continue
        assert medcalc_correct(item, f"{value:.4f}"), (item.item_id, item.calculator, value, item.answer)
        checked += 1
    assert checked >= 290  # 15 calculators × ~20 rows, a few in units not converted


def test_medcalc_candidates_rank_gold_first_and_record_operators(shared_data: Path) -> None:
    items = _rows(shared_data)
    qtc = next(i for i in items if i.calculator_id == 11)
    made = candidates(qtc, 0)
    assert made[0].operators == ["gold"]
    assert made[0].correct
    ops = {op.split(":")[0] for c in made for op in c.operators}
    assert {"relative_error", "unit_slip", "rounding", "wrong_calculator", "perturbed_input"} <= ops
    assert all("Answer: " in c.text for c in made)
    assert len({c.answer for c in made}) == len(made)
    assert candidates(qtc, 0) == made
    dated = next(i for i in items if i.calculator_id == 13)
    assert {op.split(":")[0] for c in candidates(dated, 0)[1:] for op in c.operators} == {"date_shift"}
