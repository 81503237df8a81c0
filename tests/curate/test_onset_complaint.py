"""The offline Screener's complaint and onset read as the patient's own phrases: an onset holds a time
expression and never dangles ("three days of."), what the patient started doing is not a complaint,
and a sentence that refers back ("Since then …") is a complaint only with the sentence it refers to."""

from __future__ import annotations

import re

import pytest

from livemed.curate import rules
from livemed.curate.sections import diagnostic_query
from livemed.demo import load_demo_docs
from livemed.domains import medical

METFORMIN = (
    "I'm a 55-year-old man and I was diagnosed with type 2 diabetes six weeks ago (HbA1c 58 mmol/mol). "
    "My doctor started metformin 500 mg twice a day. Since then I've had loose stools, bloating and a "
    "metallic taste almost every day, usually an hour or two after I take the tablets. I also have high "
    "blood pressure, treated with ramipril 5 mg. I have no allergies. I'm overweight (BMI 31) and I've "
    "started walking in the evenings. Is there anything I can do about the stomach side effects?"
)
# A time expression, written independently of the Screener's own pattern.
TIME = re.compile(
    r"\b(?:yesterday|last night|this morning|overnight|ago|since|for|over|past|last"
    r"|(?:hours?|days?|weeks?|months?|years?))\b",
    re.IGNORECASE,
)
REFERS_BACK = re.compile(r"^(?:since then|ever since|after that)\b", re.IGNORECASE)


def test_the_complaint_that_refers_back_comes_with_the_sentence_it_refers_to() -> None:
    narrative = rules.extract_narrative(METFORMIN)
    assert narrative.chief_complaint == [
        "My doctor started metformin 500 mg twice a day. Since then I've had loose stools, bloating and a "
        "metallic taste almost every day, usually an hour or two after I take the tablets."
    ]
    held = [fact for _, fact in narrative.entities()]
    assert sum("started metformin" in fact for fact in held) == 1  # not repeated under the medicines
    assert not any("started walking" in fact for fact in narrative.chief_complaint)
    assert narrative.onset_duration == []  # "started" is no time expression, "almost every day" a frequency


def test_starting_to_walk_is_not_a_complaint() -> None:
    post = "I'm a 50-year-old man. I've started walking in the evenings. I get a sharp pain in my heel."
    assert rules.extract_narrative(post).chief_complaint == ["I get a sharp pain in my heel."]


@pytest.mark.parametrize(
    ("text", "report", "onset"),
    [
        (
            "I'm a 38-year-old woman with a burning pain behind my breastbone that started about two "
            "months ago. It takes a while to get started in the morning.",
            False,
            ["about two months ago"],
        ),
        (
            "I'm a 64-year-old man and over the last year I've had to get up three times a night to pass "
            "urine. My stream is weak, it takes a while to get started.",
            False,
            ["over the last year"],
        ),
        (
            "Case presentation: A 6-month-old boy was brought in with three days of runny nose and cough, "
            "followed by faster breathing.",
            True,
            ["three days of runny nose and cough"],
        ),
        (
            "My son is 2 and since yesterday evening he has had a fever of 38.9 °C.",
            False,
            ["since yesterday evening"],
        ),
    ],
)
def test_the_onset_is_a_readable_time_phrase(text: str, report: bool, onset: list[str]) -> None:
    assert rules.extract_narrative(text, report=report).onset_duration == onset


def test_no_demo_case_gets_a_broken_onset_or_a_complaint_that_refers_back() -> None:
    pack = medical()
    broken = []
    for doc in load_demo_docs():
        report = doc.doc_type == "case_report"
        diagnostic = report and diagnostic_query(rules.derived_query(doc.text), pack)
        narrative = rules.extract_narrative(doc.text, report=report, diagnostic=diagnostic, pack=pack)
        for fact in narrative.onset_duration:
            if not TIME.search(fact) or fact.lower().endswith(" of") or fact.lower() == "started":
                broken.append((doc.source_id, "onset", fact))
        broken += [(doc.source_id, "complaint", f) for f in narrative.chief_complaint if REFERS_BACK.match(f)]
    assert broken == []
