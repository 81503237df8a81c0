"""The fact-coverage audit: a criterion resting on a fact the candidate never sees is caught and dropped."""

from __future__ import annotations

from typing import Any

from livemed.common.prompts import parse_blocks
from livemed.models import LLM, Engine
from livemed.records import Criterion, Narrative, Rubric
from livemed.rubrics.check import DraftCriterion
from livemed.rubrics.coverage import (
    context_facts,
    coverage,
    criteria_coverage,
    keep_seen,
    restates,
    run_summary,
    unseen_advice,
)
from livemed.rubrics.rules import RuleWriter
from livemed.rubrics.write import drop_restated, write_rubric
from tests.builders import make_case, make_rubric
from tests.rubrics.test_write import STEP1, STEP2, STEP3, scripted

FAMILY = "Book an ECG with your doctor, given your family history of heart disease."
COFFEE = "Cut back to one or two cups of coffee a day."


def test_the_facts_a_criterion_names_or_presupposes() -> None:
    assert context_facts("Advises an ECG, given their family history of heart disease.") == [
        "family history of heart disease"
    ]
    assert context_facts("Recommends cutting back on caffeine and avoiding energy drinks.") == ["caffeine"]
    # a list of triggers to cut down on is generic advice; one thing, or the patient's own, is theirs
    triggers = "Advises cutting down on caffeine, alcohol and spicy food, which can trigger flushes."
    assert context_facts(triggers) == []
    assert context_facts("Recommends cutting down on caffeine or alcohol.") == []
    assert context_facts("Recommends cutting down on your coffee, alcohol and spicy food.") == ["coffee"]
    assert context_facts("Advises cutting down on caffeine, which can worsen palpitations.") == ["caffeine"]
    assert context_facts("Explains it is common, especially with a lot of caffeine and poor sleep.") == [
        "a lot of caffeine",
        "poor sleep",
    ]
    assert context_facts("Advises avoiding NSAIDs despite the patient's kidney disease.") == [
        "kidney disease"
    ]
    # a condition, a negation, a generic word or a bare definite reference is no claim about the patient
    assert context_facts("Advises urgent review if he feels unwell despite antibiotics.") == []
    assert context_facts("Says there is no need to stop eating.") == []
    assert context_facts("Advises the patient to see their doctor promptly.") == []
    assert context_facts("Advises urgent care if the palpitations come with chest pain.") == []


def test_coverage_finds_the_unseen_fact_of_a_stored_rubric() -> None:
    case = make_case(advice=[FAMILY, COFFEE])
    rubric = make_rubric(
        case,
        [
            Criterion(
                text="Advises an ECG given their family history of heart disease",
                polarity="positive",
                axis="accuracy",
                weight=6,
            ),
            Criterion(
                text="Recommends cutting back on coffee", polarity="positive", axis="completeness", weight=4
            ),
            Criterion(
                text="Advises avoiding NSAIDs because of their kidney disease",
                polarity="positive",
                axis="safety",
                weight=8,
            ),
        ],
    )
    result = coverage(case, rubric)
    assert result.criteria == 3
    assert result.with_context == 3
    assert result.unseen == [(0, "family history of heart disease"), (1, "coffee")]  # kidney disease is seen
    assert result.visible == 1
    told = case.model_copy(
        update={
            "narrative": case.narrative.model_copy(
                update={
                    "family_history": ["My father had a heart attack at 70"],
                    "social_history": ["I drink four or five cups of strong coffee a day"],
                }
            )
        }
    )
    assert coverage(told, rubric).unseen == []  # "father" ~ "family", by the pack's equivalents


async def test_the_offline_writer_drops_a_criterion_on_an_unseen_fact_with_a_finding() -> None:
    case = make_case(advice=[FAMILY, "Seek urgent care if you get chest pain or faint."])
    (rubric,) = await write_rubric(case, RuleWriter())
    assert isinstance(rubric, Rubric)
    assert not any("family history" in c.text for c in rubric.criteria)
    (finding,) = [f for f in rubric.findings if f.startswith("unseen_fact:")]
    assert "'family history of heart disease'" in finding
    assert rubric.fact_coverage is not None
    assert rubric.fact_coverage.dropped == 1
    assert coverage(case, rubric).unseen == []
    # the same advice for a patient who said so keeps its criterion
    said = case.model_copy(
        update={"narrative": Narrative(family_history=["my family history of heart disease: my father"])}
    )
    (kept,) = await write_rubric(said, RuleWriter())
    assert isinstance(kept, Rubric)
    assert any("family history" in c.text for c in kept.criteria)
    assert kept.fact_coverage is not None
    assert kept.fact_coverage.dropped == 0
    assert run_summary([(case, rubric), (said, kept)]).startswith("fact coverage: ")
    assert "1 dropped for an unseen fact in 2 rubric(s)" in run_summary([(case, rubric), (said, kept)])


async def test_the_llm_writer_drops_it_too() -> None:
    step2 = {
        "criteria": [
            *STEP2["criteria"],
            {
                "fact_index": 2,
                "text": "Advises urgent care given their family history of stroke",
                "polarity": "positive",
            },
        ]
    }
    step3 = {"criteria": [*STEP3["criteria"], {"index": 4, "axis": "safety", "weight": 7}]}
    (rubric,) = await write_rubric(make_case(), LLM(Engine(), scripted(step3, step2=step2)))
    assert isinstance(rubric, Rubric)
    assert len(rubric.criteria) == 4
    assert any("'family history of stroke'" in f for f in rubric.findings)


def test_step_one_drops_a_fact_that_only_restates_the_narrative() -> None:
    case = make_case()
    assert restates("The patient has chronic kidney disease stage 3.", case)
    assert not restates(STEP1["facts"][1]["fact"], case)
    step: dict[str, Any] = {
        "step": "themes",
        "output": {
            "themes": [],
            "facts": [
                {
                    "fact": "A 58-year-old man with chronic kidney disease stage 3",
                    "advice_index": 0,
                    "themes": [],
                },
                *STEP1["facts"],
            ],
        },
    }
    assert drop_restated(case, step) == set()  # advice 0 still has a fact of its own
    assert step["dropped"] == {"restated": ["A 58-year-old man with chronic kidney disease stage 3"]}
    assert [f["fact"] for f in step["output"]["facts"]] == [f["fact"] for f in STEP1["facts"]]


async def test_the_llm_writer_leaves_a_restated_fact_out_of_step_two() -> None:
    restated = {
        "fact": "A 58-year-old man with chronic kidney disease stage 3",
        "advice_index": 0,  # advice 0 keeps a fact of its own, so nothing is left uncovered
        "themes": ["medication safety"],
    }
    step1 = {**STEP1, "facts": [restated, *STEP1["facts"]]}
    model = scripted(STEP3, step1=step1)  # step 2 numbers the facts without the restated one
    (rubric,) = await write_rubric(make_case(), LLM(Engine(), model, stage="rubrics"))
    assert isinstance(rubric, Rubric)
    assert rubric.steps[0]["dropped"] == {"restated": [restated["fact"]]}
    facts = [b.text for b in parse_blocks(model.calls[1][0][0]["content"]) if b.name == "fact"]
    assert facts == [f["fact"] for f in STEP1["facts"]]
    assert rubric.criteria[0].source_fact == "Avoid NSAIDs because of kidney disease"


def test_a_treatment_the_advice_itself_starts_may_be_continued() -> None:
    iron = "We recommend oral iron, one ferrous sulfate tablet once a day."
    recheck = "Recheck the haemoglobin after two to four weeks, and continue iron for three months."
    case = make_case(advice=[iron, recheck])
    texts = ["Advises oral iron once a day.", "Advises continuing iron for three months after the recheck."]
    assert criteria_coverage(case, texts).unseen == []  # the advice starts the iron it continues
    stopped = [
        "Advises continuing metformin with meals."
    ]  # a treatment neither the patient nor the advice names
    assert criteria_coverage(case, stopped).unseen == [(0, "metformin with meals")]


def test_a_wrong_value_negative_goes_with_the_positive_it_pairs() -> None:
    dose = "Given your liver disease, take paracetamol 500 mg at most, no more than 2 g a day."
    case = make_case(advice=[dose, "Seek urgent care if you faint."])
    drafts = [
        DraftCriterion(text="Advises no more than 2 g of paracetamol a day, given their liver disease.",
                       polarity="positive", axis="accuracy", weight=7, advice_index=0),
        DraftCriterion(text="States a paracetamol dose of more than 2 g a day.", polarity="negative",
                       axis="safety", weight=-9, advice_index=0),
        DraftCriterion(text="Advises urgent care if they faint.", polarity="positive", axis="safety",
                       weight=8,
                       advice_index=1),
        DraftCriterion(text="Says fainting can wait for a routine appointment.", polarity="negative",
                       axis="safety", weight=-9, advice_index=1),
    ]  # fmt: skip
    kept, result, dropped = keep_seen(case, drafts)
    assert [d.text for d in kept] == [drafts[2].text, drafts[3].text]
    assert result.dropped == 2
    assert "'liver disease'" in dropped[0].finding
    assert dropped[1].finding.endswith("its advice element's positive criteria rest on unseen facts")
    assert unseen_advice(dropped, kept) == {0}
