"""Case reports never show the answer, and the Controller's quote check refuses opposites.

A diagnostic case report's title, abstract and introduction are not narrative sources; a fact that
states the diagnosis ("Skin biopsy confirmed cutaneous sarcoidosis.") is dropped by the Screener,
and a case that still shows it is rejected as `answer_leak`. A quote whose negation or numbers differ
from its element's never grounds it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from livemed.curate.baseline import CurationBaseline
from livemed.curate.controller import narrative_source, states
from livemed.curate.leak import audit, leak_findings
from livemed.curate.screener import Screener
from livemed.models import LLM, Engine
from livemed.records import Case, Narrative, Rejection
from tests.curate.conftest import make_chain, report, thread
from tests.curate.fakes import GOOD_SCREEN, AlwaysEvidence, fake_curator, query_check

SARCOID = report(
    "sarcoid",
    text=(
        "Abstract\n\n"
        "Background: Cutaneous sarcoidosis can arise in tattoos.\n\n"
        "Case presentation: We describe a woman whose tattoo papules were cutaneous sarcoidosis.\n\n"
        "Case presentation\n\n"
        "A 38-year-old woman presented with raised itchy papules within a black tattoo on her forearm "
        "for four months. She had no cough or breathlessness. She took no regular medication and had no "
        "known allergies.\n\n"
        "Investigations: Chest X-ray showed bilateral hilar lymphadenopathy. Skin biopsy confirmed "
        "cutaneous sarcoidosis.\n\n"
        "Management: We recommend referral to a respiratory physician and a topical corticosteroid for "
        "the papules.\n\n"
        "Discussion: The final diagnosis was cutaneous sarcoidosis. Tattoo sarcoidosis may be the first "
        "sign of systemic disease."
    ),
).model_copy(update={"title": "Cutaneous sarcoidosis in a tattoo"})
BIOPSY = "Skin biopsy confirmed cutaneous sarcoidosis."
DIAGNOSTIC_QUERY = "What is the most likely diagnosis?"


def sarcoid_screen(**narrative: list[str]) -> dict[str, Any]:
    return {
        "narrative": {
            "demographics": ["38-year-old", "woman"],
            "symptoms": ["raised itchy papules within a black tattoo on her forearm"],
            "onset_duration": ["for four months"],
            "exam_labs": ["Chest X-ray showed bilateral hilar lymphadenopathy."],
            **narrative,
        },
        "query": DIAGNOSTIC_QUERY,
        "assessment": ["The final diagnosis was cutaneous sarcoidosis."],
        "advice": ["We recommend referral to a respiratory physician."],
    }


def diagnosis_check() -> dict[str, Any]:
    return {**query_check(), "query_type": "diagnosis"}


async def test_the_baseline_keeps_title_abstract_and_the_biopsy_out_of_a_diagnostic_narrative() -> None:
    async with Engine() as engine:
        draft = await Screener(LLM(engine, CurationBaseline())).screen(SARCOID)
    assert isinstance(draft, Case), draft
    assert "diagnosis" in draft.query  # derived and diagnostic
    facts = " ".join(fact for _, fact in draft.narrative.entities())
    assert "38-year-old" in facts
    assert "hilar lymphadenopathy" in facts
    assert "sarcoidosis" not in facts.lower()  # neither the abstract's sentences nor the biopsy


def test_a_diagnostic_reports_narrative_source_has_no_title_or_abstract() -> None:
    diagnostic = narrative_source(SARCOID, diagnostic=True)
    assert "A 38-year-old woman presented" in diagnostic
    assert "tattoos." not in diagnostic  # the abstract's background
    assert "papules were cutaneous sarcoidosis" not in diagnostic  # its "Case presentation:" paragraph
    assert "Cutaneous sarcoidosis in a tattoo" not in diagnostic  # the title
    assert "Tattoo sarcoidosis may be" not in diagnostic  # the discussion, as for every report
    management = narrative_source(SARCOID)
    assert "Cutaneous sarcoidosis in a tattoo" in management
    assert "tattoos." in management


async def test_a_fact_from_the_abstract_is_ungrounded_in_a_diagnostic_case() -> None:
    screen = sarcoid_screen(timeline=["We describe a woman whose tattoo papules were cutaneous sarcoidosis."])
    chain = make_chain(fake_curator(screen=screen, query=diagnosis_check()), retriever=AlwaysEvidence())
    outcome = await chain(SARCOID)
    assert isinstance(outcome, Rejection)
    assert (outcome.stage, outcome.reason) == ("controller", "ungrounded")
    assert "timeline: We describe a woman" in outcome.detail


async def test_the_screener_drops_a_biopsy_that_confirms_the_diagnosis() -> None:
    chain = make_chain(fake_curator(screen=sarcoid_screen(exam_labs=[BIOPSY])), retriever=AlwaysEvidence())
    draft = await chain.screener.screen(SARCOID)
    assert isinstance(draft, Case)
    assert BIOPSY not in draft.narrative.exam_labs
    assert any(
        "dropped a fact that states the diagnosis" in f and "biopsy confirmed" in f for f in draft.findings
    )


LABS = (
    "Haemoglobin was 92 g/L with a mean cell volume of 72 fL and ferritin of 6 micrograms/L, consistent with "
    "iron deficiency anaemia."
)


async def test_the_screener_keeps_the_results_and_cuts_their_reading_as_the_diagnosis() -> None:
    chain = make_chain(fake_curator(screen=sarcoid_screen(exam_labs=[LABS])), retriever=AlwaysEvidence())
    draft = await chain.screener.screen(SARCOID)
    assert isinstance(draft, Case)
    assert draft.narrative.exam_labs == [
        "Haemoglobin was 92 g/L with a mean cell volume of 72 fL and ferritin of 6 micrograms/L"
    ]
    assert any("cut the diagnosis" in f and "consistent with" in f for f in draft.findings)


def test_the_offline_screener_keeps_a_diagnostic_reports_results_without_their_reading() -> None:
    from livemed.curate.rules import extract_narrative

    report = (
        f"Case presentation: A 34-year-old woman had three months of tiredness.\n\nInvestigations: {LABS}"
    )
    narrative = extract_narrative(report, report=True, diagnostic=True)
    facts = [fact for _, fact in narrative.entities()]
    assert "Haemoglobin was 92 g/L with a mean cell volume of 72 fL and ferritin of 6 micrograms/L" in facts
    assert not any("iron deficiency" in fact for fact in facts)


async def test_a_biopsy_confirmed_report_that_shows_its_diagnosis_is_an_answer_leak() -> None:
    # an LLM Screener put the biopsy under history (not an episode field): grounded, but it is the answer
    screen = sarcoid_screen(history=[BIOPSY])
    chain = make_chain(fake_curator(screen=screen, query=diagnosis_check()), retriever=AlwaysEvidence())
    outcome = await chain(SARCOID)
    assert isinstance(outcome, Rejection), outcome
    assert (outcome.stage, outcome.reason) == ("controller", "answer_leak")
    assert "diagnosis 'cutaneous sarcoidosis'" in outcome.detail
    case = await chain.screener.screen(SARCOID)
    assert isinstance(case, Case)
    assert sorted(f.kind for f in leak_findings(case, max_leak=0.7)) == ["advice", "diagnosis"]
    # "the final diagnosis" is not what leaks: the element's leak counts "cutaneous sarcoidosis" only
    assert audit(case)[0].spans == ["cutaneous sarcoidosis"]
    assert audit(case)[0].leak == 1.0


def test_the_diagnosis_shows_by_single_words_but_not_by_the_askers_own_guess() -> None:
    case = Case(
        doc_id="forum:rash",
        source="forum",
        source_id="rash",
        published=datetime(2026, 1, 1, tzinfo=UTC),
        narrative=Narrative(timeline=["The out-of-hours GP said it was shingles."]),
        query="What is this rash?",
        advice=["This sounds like shingles.", "See your doctor today for antiviral tablets."],
    )
    assert audit(case)[0].leak == 0.0  # one word: never a shared run
    [finding] = leak_findings(case, max_leak=0.7)
    assert finding.describe() == "diagnosis 'shingles' (advice #0) shown 1.00 (words: shingl)"
    guess = case.model_copy(
        update={"narrative": Narrative(symptoms=["a band of blisters"]), "query": "Is this shingles?"}
    )
    assert leak_findings(guess, max_leak=0.7) == []
    management = case.model_copy(update={"query": "How should I look after it?"})
    assert leak_findings(management, max_leak=0.7) == []  # not diagnostic: naming it is the premise


def test_states_refuses_a_negated_or_numerically_different_quote() -> None:
    assert states("Use aspirin for stroke prevention", "Use aspirin for stroke prevention")
    assert not states("Do not use aspirin for stroke prevention", "Use aspirin for stroke prevention")
    assert not states("Use aspirin for stroke prevention", "Never use aspirin for stroke prevention")
    assert states("metformin 500 mg twice daily", "Take metformin 500 mg twice daily")
    assert not states("metformin 50 mg twice daily", "Take metformin 500 mg twice daily")
    assert not states("fever lasts more than three days", "See a doctor if the fever lasts over 5 days")
    assert states("fever lasts more than three days", "See a doctor if the fever lasts over 3 days")


def test_states_reads_negation_in_the_clause_of_the_elements_own_words() -> None:
    # a bound is not a negation: "no more than 4 g" is the "up to 4 g" of the element, and "in 24
    # hours" adds a number the element does not give (allowed), so the genuine quote is accepted
    dose = "Take paracetamol 1 g four times a day, up to 4 g a day"
    assert states("Take paracetamol 1 g four times a day; no more than 4 g in 24 hours", dose)
    assert states("Take no more than 4 g of paracetamol a day", "Take up to 4 g of paracetamol a day")
    assert not states("Take no more than 4 g of paracetamol a day", "Take more than 4 g of paracetamol a day")
    # a negation after the element's words is about something else
    treated = "Treated with oral amoxicillin for 14 days"
    assert states("She was treated with oral amoxicillin for 14 days with no adverse events", treated)
    assert not states("She was not treated with oral amoxicillin for 14 days", treated)
    assert not states(
        "Aspirin is not recommended for stroke prevention", "Aspirin is recommended for stroke prevention"
    )
    assert not states(
        "Take ibuprofen with food", "Take ibuprofen with food, do not drive"
    )  # its "not" unstated
    assert states("Do not stop the medicine suddenly", "Do not stop the medicine suddenly")
    assert states("Take paracetamol four times a day", "Take paracetamol 4 times a day")  # "four" is 4
    assert not states("Her little brother is not 4.", "Her little brother is 4.")  # a number is a word too
    # the clause that holds the element's words: "and" starts a new part of it
    assert states("I have no medical history and take no medicines.", "take no medicines")
    assert states("He takes no medicines and has no allergies.", "has no allergies")  # no content words
    assert states("I have no allergies and take metformin 500 mg.", "take metformin 500 mg")
    # numbers are counted: the other 15 does not hide the wrong 151
    sugar = "take 15 to 20 grams of sugar, then check your sugar again after 15 minutes"
    assert not states("Take 151 to 20 grams of sugar, then check your sugar again after 15 minutes.", sugar)


async def test_the_llm_audit_refuses_a_negated_quote_and_a_wrong_number() -> None:
    for element, quote in (
        (
            "Take amoxicillin because of the penicillin allergy.",
            "Avoid amoxicillin because of your penicillin",
        ),
        (
            "Get care when the fever persists beyond 5 days.",
            "See a doctor if the fever lasts more than three days",
        ),
    ):
        screen = copy.deepcopy(GOOD_SCREEN)
        screen["advice"].append(element)
        verdict = {"elements": [{"index": 2, "rationale": "stated", "quote": quote, "grounded": True}]}
        outcome = await make_chain(fake_curator(screen=screen, audit=verdict), audit=True)(thread())
        assert isinstance(outcome, Rejection), element
        assert outcome.reason == "ungrounded"
        assert f"refused advice: quote {quote!r} does not state it" in outcome.detail
