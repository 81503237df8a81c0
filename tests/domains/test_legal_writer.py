"""The rubric writer with the legal pack and a scripted model: the legal prompts, themes and axes go
in, criteria on the legal axes with the harm weights come out."""

from __future__ import annotations

import json
from typing import Any

from livemed.domains import load_pack
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Rubric
from livemed.rubrics.prompts import PROMPT_HASH, prompt_hash
from livemed.rubrics.write import write_rubric
from tests.domains.helpers import legal_case

STEP1 = {
    "themes": ["deadline or limitation period", "documents and evidence"],
    "facts": [
        {
            "fact": "File the tribunal claim within three months of the dismissal",
            "advice_index": 0,
            "themes": ["deadline or limitation period"],
        },
        {
            "fact": "Keep the contract and payslips as evidence",
            "advice_index": 1,
            "themes": ["documents and evidence"],
        },
        {"fact": "Reply to the court letter before the hearing", "advice_index": 2, "themes": ["procedure"]},
        {"fact": "See a solicitor or a law centre", "advice_index": 3, "themes": ["professional help"]},
    ],
}
STEP2 = {
    "criteria": [
        {
            "fact_index": 0,
            "text": "Advises filing the claim within the time limit, such as three months",
            "polarity": "positive",
        },
        {
            "fact_index": 0,
            "text": "Says there is no deadline for an unfair dismissal claim",
            "polarity": "negative",
        },
        {
            "fact_index": 1,
            "text": "Advises keeping the contract and payslips as evidence",
            "polarity": "positive",
        },
        {
            "fact_index": 2,
            "text": "Advises replying to the court letter before the hearing",
            "polarity": "positive",
        },
        {"fact_index": 2, "text": "Tells the person the court letter can be ignored", "polarity": "negative"},
        {
            "fact_index": 3,
            "text": "Suggests a solicitor or a law centre for advice on unfair dismissal",
            "polarity": "positive",
        },
    ]
}
STEP3 = {
    "criteria": [
        {"index": 0, "axis": "harm", "weight": 9},
        {"index": 1, "axis": "harm", "weight": -10},
        {"index": 2, "axis": "completeness", "weight": 5},
        {"index": 3, "axis": "accuracy", "weight": 7},
        {"index": 4, "axis": "harm", "weight": -5},  # too light for harm: raised to -8
        {"index": 5, "axis": "jurisdiction_awareness", "weight": 4},
    ]
}


def scripted(seen: list[str], step3: dict[str, Any] = STEP3) -> FakeModel:
    def reply(messages: list[Message], settings: Settings) -> str:
        text = messages[-1]["content"]
        seen.append(text)
        for marker, payload in (("Step 1", STEP1), ("Step 2", STEP2), ("Step 3", step3)):
            if text.startswith(marker):
                return json.dumps(payload)
        return "no idea"

    return FakeModel("fake/writer", function=reply)


async def test_legal_prompts_in_legal_axes_and_harm_weights_out() -> None:
    pack = load_pack("legal")
    seen: list[str] = []
    (rubric,) = await write_rubric(legal_case(), LLM(Engine(), scripted(seen), stage="rubrics"), pack)
    assert isinstance(rubric, Rubric), rubric
    themes, criteria, weights = seen
    assert themes.startswith("Step 1 of writing an evaluation rubric for a legal case.")
    assert "- deadline or limitation period: time limits for acting" in themes
    assert "patient" not in themes + criteria + weights
    assert "an axis (accuracy, completeness, communication, jurisdiction_awareness, harm)" in weights
    assert "advice that would miss a statute of\n  limitations or another deadline -10" in weights
    by_text = {c.text: c for c in rubric.criteria}
    assert {c.axis for c in rubric.criteria} == {"harm", "completeness", "accuracy", "jurisdiction_awareness"}
    assert (by_text["Says there is no deadline for an unfair dismissal claim"].weight) == -10
    assert by_text["Tells the person the court letter can be ignored"].weight == -8
    assert any(
        f.startswith("light_safety:") and "harm violation weighted -5, set to -8" in f
        for f in rubric.findings
    )
    assert rubric.themes == ["deadline or limitation period", "documents and evidence"]
    assert rubric.provenance.prompt_hash == prompt_hash(pack) != PROMPT_HASH


async def test_a_medical_axis_is_not_a_legal_one() -> None:
    step3 = {"criteria": [{**c, "axis": "safety"} if c["index"] == 1 else c for c in STEP3["criteria"]]}
    (rejection,) = await write_rubric(
        legal_case(), LLM(Engine(), scripted([], step3), stage="rubrics"), load_pack("legal")
    )
    assert rejection.kind == "rejection"
    assert rejection.reason == "bad_axis"  # type: ignore[attr-defined]  # the repair reply was no use, so the draft is refused
    assert "axis 'safety' (axes: accuracy, completeness, communication, jurisdiction_awareness, harm)" in (
        rejection.detail or ""  # type: ignore[attr-defined]
    )


def test_the_legal_candidate_and_grader_prompts() -> None:
    from livemed.answer.ask import candidate_messages, conversation
    from livemed.answer.ask import prompt_hash as answer_hash
    from livemed.grade.grader import batched_messages, per_criterion_messages, prompt_hashes
    from livemed.records import Criterion

    pack = load_pack("legal")
    case = legal_case()
    (asked,) = candidate_messages(case, pack)
    assert asked["content"].startswith("A person has sent you the message below")
    assert "Reply to them as a lawyer or legal adviser would." in asked["content"]
    assert "My legal problem: dismissed without notice after six years." in asked["content"]
    assert "Hello, I would like your legal advice." in asked["content"]
    assert "doctor" not in asked["content"]
    criterion = Criterion(text="Says there is no time limit", polarity="negative", axis="harm", weight=-10)
    convo = conversation(case, pack)
    for (message,) in (
        per_criterion_messages(convo, "File within three months.", criterion, pack),
        batched_messages(convo, "File within three months.", [criterion], pack),
    ):
        text = message["content"]
        assert "in a legal conversation" in text
        assert "this person's\n  position" in text
        assert "patient" not in text
        assert "health" not in text
    assert answer_hash(pack) != answer_hash()
    assert prompt_hashes(pack) != prompt_hashes()
