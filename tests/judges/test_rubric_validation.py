"""Rubric-grader validation: mutations of a gold answer with a known score order, graded k times."""

from __future__ import annotations

import json

from livemed.common.prompts import parse_blocks
from livemed.grade.lexical import LexicalGrader
from livemed.judges.rubric_validation import EXPECT, FILLER, validate, variants
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Criterion
from tests.builders import make_case, make_rubric

CASE = make_case()
OTHER = make_case("demo:2", advice=["Drink plenty of water every day."])
CRITERIA = [
    Criterion(
        text="Advises colchicine at a kidney-adjusted dose",
        polarity="positive",
        axis="accuracy",
        weight=6,
        source_fact=CASE.advice[1],
    ),
    Criterion(
        text="Advises urgent care for fever",
        polarity="positive",
        axis="safety",
        weight=4,
        source_fact=CASE.advice[2],
    ),
    Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-9),
]
RUBRIC = make_rubric(CASE, CRITERIA)
OTHER_RUBRIC = make_rubric(
    OTHER,
    [
        Criterion(
            text="Advises water intake",
            polarity="positive",
            axis="accuracy",
            weight=5,
            source_fact=OTHER.advice[0],
        ),
    ],
)


def careful(messages: list[Message], settings: Settings) -> str:
    """A grader that reads: met when a line names the criterion's key word and does not forbid it."""
    blocks = {b.name: b.text for b in parse_blocks(messages[-1]["content"])}
    key = blocks["criterion"].split()[1].lower()
    lines = [line.lower() for line in blocks["response"].splitlines()]
    met = any(key in line and not line.startswith(("do not", "avoid")) for line in lines)
    return json.dumps({"explanation": "read", "criteria_met": met})


def test_variants_are_deterministic_and_cover_every_mutation() -> None:
    made = variants(CASE, RUBRIC, OTHER, 0)
    assert [v.mutation for v in made] == ["drop_advice", "negate", "contraindicated", "add_other_case", "pad"]
    assert made == variants(CASE, RUBRIC, OTHER, 0)
    by = {v.mutation: v.text for v in made}
    assert CASE.advice[0] in by["drop_advice"]  # the dropped element is one a positive criterion checks
    assert by["drop_advice"].count("\n") == 1
    assert "Also: Recommends ibuprofen" in by["contraindicated"]
    assert by["pad"].endswith(FILLER)
    assert OTHER.advice[0] in by["add_other_case"]
    assert "Do not " in by["negate"]


async def test_a_careful_grader_orders_every_mutation_and_is_stable() -> None:
    judge = LLM(Engine(), FakeModel("fake/careful", function=careful), stage="judges")
    result = (await validate([(CASE, RUBRIC), (OTHER, OTHER_RUBRIC)], judge, samples=2)).as_dict()
    assert result["mutations"]["contraindicated"]["order_accuracy"] == 1.0
    for mutation, row in result["mutations"].items():
        assert row["expect"] == EXPECT[mutation]
        assert row["order_accuracy"] == 1.0, mutation
        assert row["stability"] == 1.0
    assert result["mutations"]["drop_advice"]["n"] == 2  # one case × 2 samples (OTHER has one element)
    assert result["compliance"] == 1.0
    assert result["axes"]["safety"] == 1.0


async def test_a_grader_that_meets_everything_fails_the_strict_orders() -> None:
    yes = FakeModel("fake/yes", default=json.dumps({"explanation": "x", "criteria_met": True}))
    result = (await validate([(CASE, RUBRIC)], LLM(Engine(), yes), samples=1)).as_dict()
    rows = result["mutations"]
    assert rows["drop_advice"]["order_accuracy"] == 0.0
    assert rows["negate"]["order_accuracy"] == 0.0
    assert rows["pad"]["order_accuracy"] == 1.0  # not higher: equal scores hold


async def test_unparsable_verdicts_lower_compliance_and_failed_calls_are_counted() -> None:
    chatty = FakeModel("fake/chatty", default="met, I think")
    result = (await validate([(CASE, RUBRIC)], LLM(Engine(), chatty), samples=1)).as_dict()
    assert result["compliance"] == 0.0
    assert result["call_failed"] == 0
    offline = (await validate([(CASE, RUBRIC)], LexicalGrader(), samples=1)).as_dict()
    assert offline["compliance"] == 1.0
    assert offline["order_accuracy"] is not None
