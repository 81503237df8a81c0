"""The rule-based Screener keeps the answer out of the narrative, and each sentence in one field."""

from __future__ import annotations

from livemed.common.text import sentences
from livemed.curate import rules
from livemed.curate.baseline import screen
from livemed.curate.screener import screener_messages
from livemed.curate.sections import advice_like, sections
from tests.curate.conftest import report

DVT = """Case presentation: A 61-year-old woman presented with four days of pain and swelling in her \
left calf. She took anastrozole. She had no known drug allergies.

Investigations: A proximal leg vein ultrasound scan showed a thrombus in the left popliteal vein.

Management: We recommend anticoagulation with a direct oral anticoagulant such as apixaban. \
Report any unusual bleeding or black stools while taking anticoagulants.

Outcome: Her calf swelling settled over four weeks and she continued apixaban.

Learning points
Calf swelling after a long flight needs an ultrasound scan."""


def _facts(text: str, *, report_text: bool) -> list[tuple[str, str]]:
    return rules.extract_narrative(text, report=report_text).entities()


def test_management_outcome_and_learning_points_never_reach_the_narrative() -> None:
    facts = " ".join(fact for _, fact in _facts(DVT, report_text=True))
    for held_back in ("apixaban", "anticoagulant", "bleeding", "settled", "long flight"):
        assert held_back not in facts
    assert "A proximal leg vein ultrasound scan showed a thrombus in the left popliteal vein." in facts


def test_a_reports_management_section_is_its_advice_without_the_label_and_without_the_outcome() -> None:
    out = screen(screener_messages(report(text=DVT))[1]["content"])
    assert out.advice == [
        "We recommend anticoagulation with a direct oral anticoagulant such as apixaban.",
        "Report any unusual bleeding or black stools while taking anticoagulants.",
    ]
    assert [s.heading for s in sections(DVT)] == [
        "case presentation",
        "investigations",
        "management",
        "outcome",
        "learning points",
    ]


def test_advice_like_sentences_in_a_post_stay_out_of_the_narrative() -> None:
    post = (
        "I'm a 40-year-old man with a sore knee for two weeks. "
        "You should never ignore knee pain, my friend says. "
        "Rest and ice it, the pharmacist told me. Ice packs are usually treated with caution."
    )
    facts = [fact for _, fact in _facts(post, report_text=False)]
    assert not any("should" in f or f.startswith("Rest") for f in facts)
    assert advice_like("We recommend oral iron.")
    assert advice_like("Cellulitis should be treated with flucloxacillin.")
    assert not advice_like("I take metformin 500 mg twice a day.")


def test_each_sentence_fills_one_field_and_the_onset_comes_from_the_complaint() -> None:
    post = (
        "I'm a 58-year-old man and last night I woke with severe pain in my right big toe. "
        "I had a similar attack in the same toe two years ago that settled in a week. "
        "I have high blood pressure treated with bendroflumethiazide 2.5 mg. "
        "I have no fever and no allergies."
    )
    narrative = rules.extract_narrative(post)
    assert narrative.onset_duration == ["last night"]  # not "two years ago", an earlier attack
    for sentence in sentences(post):
        holders = {name for name, fact in narrative.entities() if fact == sentence}
        assert len(holders) <= 1, (sentence, holders)
    assert narrative.demographics == ["58-year-old", "man"]


def test_a_compound_sentence_is_split_into_the_fields_its_clauses_fit() -> None:
    text = "His medications were a tiotropium inhaler and metformin, and he had no known drug allergies."
    narrative = rules.extract_narrative(text, report=True)
    assert narrative.medications == ["His medications were a tiotropium inhaler and metformin"]
    assert narrative.allergies == ["he had no known drug allergies"]
