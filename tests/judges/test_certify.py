"""Certification: trivial graders fail, a good scripted grader passes, every figure has its n and
interval, and too few items is 'not enough data' (the battery and the verdicts, with scripted models)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from livemed.common.closed_form import proportion
from livemed.common.prompts import parse_blocks
from livemed.judges.battery import (
    judge_in_memory,
    make_battery,
    pair_trivial,
    rubric_outcomes,
    rubric_trivial,
)
from livemed.judges.certification import combine, decide, pair_part, rubric_part
from livemed.judges.rubric_validation import Probe, battery_items
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Case, Criterion, Rubric
from tests.builders import make_case, make_rubric
from tests.judges.helpers import oracle

AXES = ("accuracy", "safety", "completeness")


def cases(n: int = 12) -> list[tuple[Case, Rubric]]:
    """`n` cases of three facts each, one positive criterion per fact (axes in turn), and one negative."""
    out = []
    for i in range(n):
        advice = [f"Drug{i}x{j} lowers the risk of stroke {j + 2} fold in adults." for j in range(3)]
        case = make_case(f"demo:{i}", advice=advice)
        criteria = [
            Criterion(text=f"Explains that {a}", polarity="positive", axis=AXES[j], weight=5, source_fact=a)
            for j, a in enumerate(advice)
        ]
        criteria.append(
            Criterion(text=f"Recommends poison{i}", polarity="negative", axis="safety", weight=-5)
        )
        out.append((case, make_rubric(case, criteria)))
    return out


def truth(items: list[Probe]) -> dict[tuple[str, str], bool]:
    return {(p.criterion.text, p.text): p.expected for p in items}


def scripted(name: str, verdict: Callable[[str, str, random.Random], bool]) -> LLM:
    """A per-criterion grader whose verdict is `verdict(criterion, response, rng)` (seeded per call)."""

    def reply(messages: list[Message], settings: Settings) -> str:
        blocks = {b.name: b.text for b in parse_blocks(messages[-1]["content"])}
        rng = random.Random(f"{name}:{blocks['criterion']}:{blocks['response']}:{settings.sample}")
        met = verdict(blocks["criterion"], blocks["response"], rng)
        return json.dumps({"explanation": "scripted", "criteria_met": met})

    return LLM(Engine(), FakeModel(name, function=reply), stage="judges")


async def rubric_card(grader: LLM, n_cases: int = 12) -> dict[str, object]:
    battery = make_battery(cases(n_cases), None, seed=0, per_dataset=None, with_pairs=False)
    outcomes = await rubric_outcomes(battery, grader, "per-criterion", 1)
    return rubric_part(outcomes, await rubric_trivial(battery, 0))


def test_every_axis_of_the_battery_is_balanced_met_and_not_met_for_both_polarities() -> None:
    (case, rubric), *_ = cases(1)
    items = battery_items(case, rubric)
    for axis in AXES:
        mine = [p for p in items if p.criterion.axis == axis]
        for polarity in ("positive", "negative"):
            flags = [p.expected for p in mine if p.criterion.polarity == polarity]
            assert flags, (axis, polarity)
            assert flags.count(True) == flags.count(False), (axis, polarity)
    texts = {p.form: p.text for p in items if p.fact == f"{case.id}#0"}
    assert "There is no doubt that drug0x0 lowers" in texts["no_doubt"]
    assert "but that is a myth" in texts["myth"]
    assert case.advice[0] not in texts["drop"]


async def test_trivial_graders_fail_every_axis() -> None:
    always = scripted("fake/always-met", lambda c, r, rng: True)
    never = scripted("fake/never-met", lambda c, r, rng: False)
    coin = scripted("fake/coin", lambda c, r, rng: rng.random() < 0.5)
    for grader in (always, never, coin):
        card = await rubric_card(grader)
        assert card["verdict"] == "failed", grader.model.id
        for name, figure in card["figures"].items():  # type: ignore[attr-defined]
            assert figure["verdict"] in ("failed", "not enough data"), (grader.model.id, name)
        assert card["figures"]["all axes"]["verdict"] == "failed"  # type: ignore[index]
    constant = await rubric_card(always)
    assert constant["figures"]["all axes"]["value"] == 0.5  # type: ignore[index]  # balanced


async def test_a_good_grader_passes() -> None:
    battery = make_battery(cases(), None, seed=0, per_dataset=None, with_pairs=False)
    right = truth(battery.items)
    good = scripted(
        "fake/good", lambda c, r, rng: right[(c, r)] if rng.random() < 0.95 else not right[(c, r)]
    )
    card = rubric_part(
        await rubric_outcomes(battery, good, "per-criterion", 1), await rubric_trivial(battery, 0)
    )
    assert card["verdict"] == "passed"
    figure = card["figures"]["all axes"]
    assert figure["low"] > figure["bar"]
    assert set(figure["trivial"]) == {"always-met", "never-met", "random", "offline/lexical"}
    assert figure["value"] > figure["trivial"]["offline/lexical"]["value"]


async def test_figures_carry_n_and_interval() -> None:
    card = await rubric_card(scripted("fake/always-met", lambda c, r, rng: True))
    for figure in [*card["figures"].values(), *card["breakdown"].values(), card["compliance"]]:  # type: ignore[attr-defined]
        assert {"value", "k", "n", "low", "high"} <= set(figure)
        assert figure["n"] > 0
        assert figure["low"] <= figure["value"] <= figure["high"]


async def test_fewer_than_30_items_is_not_enough_data() -> None:
    card = await rubric_card(scripted("fake/always-met", lambda c, r, rng: True), n_cases=1)
    assert card["figures"]["axis accuracy"]["n"] < 30  # type: ignore[index]
    assert card["figures"]["axis accuracy"]["verdict"] == "not enough data"  # type: ignore[index]
    assert decide(proportion(29, 29), 0.5) == "not enough data"
    assert decide(proportion(30, 30), 0.5) == "passed"
    assert decide(proportion(15, 30), 0.5) == "failed"
    assert decide(proportion(18, 30), 0.5) == "not enough data"  # above the bar, interval too wide
    assert combine(["passed", None]) == "passed"
    assert combine(["passed", "not enough data"]) == "not enough data"
    assert combine(["passed", "failed"]) == "failed"


async def test_six_abstracts_certify_nothing_however_many_pairs_they_make() -> None:
    """The bundled PICO set: ~100 pairs from 6 abstracts. Its games cluster in 6 items, so even an
    oracle's figures are "not enough data" (a bootstrap over the items, and fewer than 30 of them)."""
    battery = make_battery([], None, seed=0, per_dataset=None)
    assert {p.dataset for p in battery.pairs} == {"pico"}
    assert len(battery.pairs) >= 30
    trivial = await pair_trivial(battery.pairs)
    best, _ = await judge_in_memory(battery.pairs, LLM(Engine(), oracle(battery.pairs)), 1, 0.0)
    card = pair_part(best, [], trivial)
    correctness = card["figures"]["correctness"]
    assert (correctness["value"], correctness["items"]) == (1.0, 6)
    assert correctness["n"] == 2 * len(battery.pairs)
    assert correctness["verdict"] == "not enough data"
    assert card["verdict"] == "not enough data"


@pytest.mark.shared_data
async def test_always_a_fails_the_pairs_and_an_oracle_passes(shared_data: Path) -> None:
    battery = make_battery([], shared_data, seed=0, per_dataset=60)
    assert {"pubmedqa", "medqa", "medcalc"} <= {p.dataset for p in battery.pairs}
    trivial = await pair_trivial(battery.pairs)
    best, _ = await judge_in_memory(battery.pairs, LLM(Engine(), oracle(battery.pairs)), 1, 0.0)
    probe, _ = await judge_in_memory(battery.probes, LLM(Engine(), oracle(battery.probes)), 1, 0.0)
    card = pair_part(best, probe, trivial)
    assert card["figures"]["correctness"]["verdict"] == "passed"
    assert card["figures"]["correctness"]["value"] > 0.85  # the oracle knows the gold of most texts
    assert card["figures"]["correctness"]["items"] >= 30
    assert card["figures"]["position-consistent"]["n"] == len(battery.pairs)
    biased = pair_part(trivial["offline/always-a"], [], trivial)
    assert biased["verdict"] == "failed"
    assert biased["figures"]["correctness"]["value"] == 0.5
    assert biased["figures"]["position-consistent"]["value"] == 0.0
