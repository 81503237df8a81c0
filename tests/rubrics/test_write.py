"""The three-step rubric writer (FakeModel), its repair-or-reject path, and the rule-based baseline."""

from __future__ import annotations

import json
from typing import Any

from livemed.common.prompts import DATA_RULES, parse_blocks
from livemed.models import LLM, Engine, Message, Settings, get_model
from livemed.models.fake import FakeModel
from livemed.records import Rejection, Rubric
from livemed.rubrics.prompts import PROMPT_HASH
from livemed.rubrics.rules import RuleWriter
from livemed.rubrics.write import write_rubric
from tests.builders import make_case

STEP1: dict[str, Any] = {
    "themes": ["medication safety", "emergency referral"],
    "facts": [
        {
            "fact": "Avoid NSAIDs because of kidney disease",
            "advice_index": 0,
            "themes": ["medication safety"],
        },
        {"fact": "Colchicine at a kidney-adjusted dose", "advice_index": 1, "themes": ["medication safety"]},
        {
            "fact": "Urgent care for fever or a hot red joint",
            "advice_index": 2,
            "themes": ["emergency referral"],
        },
    ],
}
STEP2: dict[str, Any] = {
    "criteria": [
        {
            "fact_index": 0,
            "text": "Advises avoiding NSAIDs because of the kidney disease",
            "polarity": "positive",
        },
        {"fact_index": 0, "text": "Recommends ibuprofen for the gout pain", "polarity": "negative"},
        {"fact_index": 1, "text": "Suggests colchicine with a kidney-adjusted dose", "polarity": "positive"},
        {"fact_index": 2, "text": "Advises urgent care if fever develops", "polarity": "positive"},
    ]
}
STEP3: dict[str, Any] = {
    "criteria": [
        {"index": 0, "axis": "safety", "weight": 8},
        {"index": 1, "axis": "safety", "weight": -9},
        {"index": 2, "axis": "accuracy", "weight": 6},
        {"index": 3, "axis": "safety", "weight": 7},
    ]
}


def scripted(
    step3: dict[str, Any],
    repair: dict[str, Any] | None = None,
    step1: dict[str, Any] = STEP1,
    step2: dict[str, Any] = STEP2,
) -> FakeModel:
    def reply(messages: list[Message], settings: Settings) -> str:
        text = messages[0]["content"]
        if text.startswith("A draft evaluation rubric"):
            return json.dumps(repair) if repair else "no idea"
        for marker, payload in (("Step 1", step1), ("Step 2", step2), ("Step 3", step3)):
            if text.startswith(marker):
                return json.dumps(payload)
        raise AssertionError(text[:40])

    return FakeModel("fake/writer", function=reply)


async def test_three_recorded_steps_make_a_checked_rubric() -> None:
    model = scripted(STEP3)
    (rubric,) = await write_rubric(make_case(), LLM(Engine(), model, stage="rubrics"))
    assert isinstance(rubric, Rubric)
    assert [s["step"] for s in rubric.steps] == ["themes", "criteria", "weights"]
    assert rubric.steps[0]["output"]["themes"] == STEP1["themes"]
    assert rubric.themes == ["medication safety", "emergency referral"]
    assert [c.weight for c in rubric.criteria] == [8, -9, 6, 7]
    negative = rubric.criteria[1]
    assert negative.polarity == "negative"
    assert negative.source_fact == "Avoid NSAIDs because of kidney disease"
    assert rubric.criteria[3].theme == "emergency referral"
    assert rubric.findings == []
    assert rubric.provenance.model_id == "fake/writer"
    assert rubric.provenance.prompt_hash == PROMPT_HASH
    prompts = [call[0][0]["content"] for call in model.calls]
    assert len(prompts) == 3
    blocks = parse_blocks(prompts[0])
    assert [b.name for b in blocks] == ["narrative", "query", *["advice"] * len(make_case().advice)]
    assert "chronic kidney disease" in blocks[0].text
    assert [b.attrs["i"] for b in blocks[2:]] == [str(n) for n in range(len(make_case().advice))]
    assert all(DATA_RULES in prompt for prompt in prompts)
    assert [b.attrs["polarity"] for b in parse_blocks(prompts[2]) if b.name == "criterion"] == [
        c["polarity"] for c in STEP2["criteria"]
    ]
    assert all(settings.temperature == 0 for _, settings in model.calls)


async def test_a_failing_draft_gets_one_repair_as_a_patch() -> None:
    bad = {"criteria": [{**c, "weight": -c["weight"]} if c["index"] == 2 else c for c in STEP3["criteria"]]}
    flagged = {**STEP2["criteria"][2], "axis": "accuracy", "weight": 6, "advice_index": 1}
    patch = {"replace": [{"index": 2, "criterion": flagged}]}
    model = scripted(bad, repair=patch)
    (rubric,) = await write_rubric(make_case(), LLM(Engine(), model))
    assert isinstance(rubric, Rubric)
    assert [s["step"] for s in rubric.steps] == ["themes", "criteria", "weights", "repair"]
    assert any(f.startswith("before repair: sign_mismatch: #2 ") for f in rubric.findings)
    assert [c.weight for c in rubric.criteria] == [8, -9, 6, 7]
    assert rubric.criteria[0].source_fact == "Avoid NSAIDs because of kidney disease"  # kept as it was
    repair = model.calls[-1][0][0]["content"]
    assert "PATCH of the flagged criteria" in repair
    blocks = parse_blocks(repair)
    assert {b.name for b in blocks} >= {"narrative", "query", "findings", "advice", "criterion"}
    assert [b.attrs["i"] for b in blocks if b.name == "criterion"] == ["0", "1", "2", "3"]


async def test_a_rubric_that_stays_broken_is_rejected_with_its_findings() -> None:
    no_positive = {"criteria": [{"index": i, "axis": "safety", "weight": -5} for i in range(4)]}
    (rejection,) = await write_rubric(make_case(), LLM(Engine(), scripted(no_positive)))
    assert isinstance(rejection, Rejection)
    assert rejection.stage == "rubrics"
    assert rejection.record_id == "rubric:case:demo:1"
    assert rejection.reason == "sign_mismatch"
    assert "no_positive" in rejection.detail


async def test_an_unusable_step_is_a_rejection() -> None:
    model = FakeModel("fake/writer", function=lambda m, s: "not json")
    (rejection,) = await write_rubric(make_case(), LLM(Engine(), model))
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "themes_failed"


async def test_rule_writer_baseline() -> None:
    writer = get_model("offline/rules")
    assert isinstance(writer, RuleWriter)
    (rubric,) = await write_rubric(make_case(), writer)
    assert isinstance(rubric, Rubric)
    texts = {c.text: c for c in rubric.criteria}
    avoid = texts["Advises avoiding ibuprofen and other NSAIDs because of their kidney disease."]
    assert avoid.polarity == "positive"
    assert avoid.source_fact == make_case().advice[0]
    urgent = next(c for c in rubric.criteria if "urgent care" in c.text and c.polarity == "positive")
    assert (urgent.axis, urgent.weight) == ("safety", 8)
    prohibition = texts["Recommends ibuprofen and other NSAIDs despite the patient's kidney disease."]
    assert (prohibition.polarity, prohibition.axis, prohibition.weight) == ("negative", "safety", -8)
    allergy = texts[
        "Recommends penicillin or a penicillin-class antibiotic such as amoxicillin despite the patient's "
        "penicillin allergy."
    ]
    assert (allergy.axis, allergy.weight) == ("safety", -10)
    red_flag = next(c for c in rubric.criteria if c.text.startswith("Says there is no need for urgent care"))
    assert (red_flag.polarity, red_flag.weight) == ("negative", -9)
    assert rubric.provenance.model_id == "offline/rules"
    assert rubric.provenance.prompt_hash is None
    assert [s["step"] for s in rubric.steps] == ["themes", "criteria", "weights"]


async def test_a_weights_reply_numbered_from_1_is_detected() -> None:
    from_one = {"criteria": [{**c, "index": c["index"] + 1} for c in STEP3["criteria"]]}
    (rejection,) = await write_rubric(make_case(), LLM(Engine(), scripted(from_one)))
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "weights_failed"
    assert "indices [1, 2, 3, 4] are not exactly 0..3" in rejection.detail


async def test_a_weights_reply_is_joined_by_the_copied_text_in_any_order() -> None:
    texts = [c["text"] for c in STEP2["criteria"]]
    shuffled = [{**w, "index": 9, "text": texts[w["index"]]} for w in reversed(STEP3["criteria"])]
    (rubric,) = await write_rubric(make_case(), LLM(Engine(), scripted({"criteria": shuffled})))
    assert isinstance(rubric, Rubric)
    assert [c.weight for c in rubric.criteria] == [8, -9, 6, 7]


async def test_step_1_keeps_only_facts_under_listed_themes_and_coverage_follows() -> None:
    off_list = {"fact": "Urgent care for fever or a hot red joint", "advice_index": 2, "themes": ["vibes"]}
    step1 = {"themes": ["medication safety", "vibes"], "facts": [*STEP1["facts"][:2], off_list]}
    model = scripted(
        {"criteria": STEP3["criteria"][:3]}, step1=step1, step2={"criteria": STEP2["criteria"][:3]}
    )
    (rubric,) = await write_rubric(make_case(), LLM(Engine(), model))
    assert isinstance(rubric, Rubric)
    assert rubric.themes == ["medication safety"]
    assert rubric.steps[0]["dropped"] == {"facts": [off_list["fact"]], "themes": ["vibes"]}
    assert not any("uncovered_advice" in f for f in rubric.findings)  # advice #2 was dropped by step 1
    criteria_prompt = model.calls[1][0][0]["content"]
    assert [b.text for b in parse_blocks(criteria_prompt) if b.name == "fact"] == [
        f["fact"] for f in STEP1["facts"][:2]
    ]
    themes_prompt = model.calls[0][0][0]["content"]
    assert "- red flag: the warning signs" in themes_prompt  # the closed, defined list is shown
    weights_prompt = model.calls[2][0][0]["content"]
    assert [b.name for b in parse_blocks(weights_prompt)][:3] == ["narrative", "query", "themes"]
    assert "-4 to -7 for contradicting" in weights_prompt  # a band for non-safety negatives


async def test_no_fact_under_a_listed_theme_is_a_rejection() -> None:
    step1 = {"themes": ["vibes"], "facts": [{"fact": "Be well", "advice_index": 0, "themes": ["vibes"]}]}
    (rejection,) = await write_rubric(make_case(), LLM(Engine(), scripted(STEP3, step1=step1)))
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "themes_failed"
