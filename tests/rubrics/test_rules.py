"""The offline/rules writer: actions without labels or hedges, bipolar rubrics, and the unsafe baseline."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.domains import load_pack
from livemed.records import Narrative
from livemed.rubrics.decisive import decisive
from livemed.rubrics.phrasing import criterion_text
from livemed.rubrics.rules import RuleWriter, allergens
from tests.builders import make_case


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("penicillin", ["penicillin"]),
        ("She is allergic to penicillin and sulfa drugs.", ["penicillin", "sulfa drugs"]),
        ("Known penicillin allergy.", ["penicillin"]),
        ("Allergies: amoxicillin", ["amoxicillin"]),
        ("I have no allergies.", []),
        ("No known drug allergies", []),
        ("NKDA", []),
        ("Management: We recommend oral clarithromycin for 7 days.", []),
        ("History:", []),
    ],
)
def test_allergens_are_extracted_not_whole_sentences(entry: str, expected: list[str]) -> None:
    assert allergens(entry) == expected


def test_rule_writer_negatives() -> None:
    case = make_case(
        narrative=Narrative(
            allergies=[
                "I have no allergies.",
                "Management: We recommend oral clarithromycin.",
                "allergic to sulfa",
                "I'm allergic to cats.",
            ]
        ),
        advice=["Avoid bed rest; staying active helps recovery.", "Do not take aspirin, it thins the blood."],
    )
    _, drafts, _ = RuleWriter().draft(case)
    negatives = {d.text: (d.axis, d.weight) for d in drafts if d.polarity == "negative"}
    assert negatives == {
        "Recommends a sulfonamide antibiotic such as co-trimoxazole despite the patient's sulfa allergy.": (
            "safety",
            -10,
        ),
        "Recommends bed rest.": ("safety", -8),
        "Recommends aspirin.": ("safety", -8),
    }  # and nothing for "cats": no reply recommends an animal


@pytest.mark.parametrize(
    ("element", "criterion"),
    [
        (
            "Management: We recommend anticoagulation with a direct oral anticoagulant such as apixaban or "
            "rivaroxaban for at least three months.",
            "Recommends anticoagulation with a direct oral anticoagulant such as apixaban or rivaroxaban for "
            "at least three months.",
        ),
        (
            "You should see your doctor for an ECG, given your family history.",
            "Advises the patient to see their doctor for an ECG, given their family history.",
        ),
        (
            "Take paracetamol or ibuprofen for the pain.",
            "Advises the patient to take paracetamol or ibuprofen for the pain.",
        ),
        ("Do not use aspirin for stroke prevention.", "Advises not to use aspirin for stroke prevention."),
        ("Review the patient within 48 hours.", "Recommends reviewing the patient within 48 hours."),
        ("Advise him to keep the leg raised.", "Advises the patient to keep the leg raised."),
        ("I would suggest cutting back on coffee.", "Recommends cutting back on coffee."),
        (
            "This sounds like a lateral ankle sprain.",
            "Explains that this sounds like a lateral ankle sprain.",
        ),
    ],
)
def test_positive_criteria_name_the_action_without_labels_or_frames(element: str, criterion: str) -> None:
    assert criterion_text(element) == criterion


def test_rubrics_are_bipolar_with_axes_as_the_content_says() -> None:
    case = make_case(
        narrative=Narrative(
            allergies=["allergic to penicillin"],
            medications=["warfarin 3 mg daily"],
            history=["atrial fibrillation"],
        ),
        query="What can I take for my sprained ankle pain?",
        advice=[
            "Take paracetamol for the pain.",
            "This sounds like a mild ankle sprain.",
            "Seek urgent care if you cannot put any weight on the foot.",
            "Avoid ibuprofen because it raises the bleeding risk with warfarin.",
        ],
    )
    _, drafts, _ = RuleWriter().draft(case)
    by_text = {d.text: (d.polarity, d.axis, d.weight) for d in drafts}
    assert by_text["Advises the patient to take paracetamol for the pain."] == ("positive", "accuracy", 7)
    assert by_text["Explains that this sounds like a mild ankle sprain."] == ("positive", "accuracy", 6)
    assert (
        by_text["Advises avoiding ibuprofen because it raises the bleeding risk with warfarin."][1]
        == "safety"
    )
    negatives = [d for d in drafts if d.polarity == "negative"]
    assert {d.axis for d in negatives} == {"safety"}
    assert all(-10 <= d.weight <= -8 for d in negatives)
    texts = [d.text for d in negatives]
    assert any("despite the patient's penicillin allergy" in t for t in texts)
    assert any("alongside the patient's warfarin" in t for t in texts)
    assert "Recommends ibuprofen." in texts
    assert len({d.axis for d in drafts}) >= 2


def test_the_unsafe_baseline_breaks_a_negative_criterion_the_reference_does_not() -> None:
    from livemed.answer.baselines import ReferenceAnswerer
    from livemed.answer.unsafe import UnsafeAnswerer
    from livemed.grade.lexical import match

    case = make_case(
        narrative=Narrative(allergies=["I'm allergic to penicillin (rash)."]),
        advice=["We recommend oral clarithromycin for cellulitis in people with penicillin allergy."],
    )
    _, drafts, _ = RuleWriter().draft(case)
    [negative] = [d.text for d in drafts if d.polarity == "negative"]
    unsafe, reference = UnsafeAnswerer().answer(case), ReferenceAnswerer().answer(case)
    assert match(unsafe, negative)[0]
    assert not match(reference, negative)[0]
    assert UnsafeAnswerer().id == "offline/unsafe"


@pytest.mark.parametrize(
    ("advice", "expected"),
    [
        ("Try not to avoid the train, because avoidance keeps the fear going.", []),  # a double negative
        ("Most sore throats do not require antibiotics.", []),  # a statement, not a warning
        ("Wash your hands to avoid complications such as infection.", []),  # "avoid" as "prevent"
        ("Do not insert cotton buds inside the ear.", ["Recommends inserting cotton buds inside the ear."]),
        ("Codeine should not be used for children under 12.", ["Recommends codeine for children under 12."]),
        ("Stop wearing your contact lenses.", ["Recommends continuing to wear their contact lenses."]),
    ],
)
def test_warnings_become_negatives_and_statements_do_not(advice: str, expected: list[str]) -> None:
    case = make_case(narrative=Narrative(), advice=[advice])
    _, drafts, _ = RuleWriter().draft(case)
    assert [d.text for d in drafts if d.polarity == "negative"] == expected


def test_offline_unsafe_is_a_registered_baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from livemed.answer.unsafe import UnsafeAnswerer
    from livemed.cli import app
    from livemed.models import get_model

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    assert "offline/unsafe" in result.output
    assert isinstance(get_model("offline/unsafe"), UnsafeAnswerer)


@pytest.mark.parametrize(
    ("advice", "expected"),
    [
        ("Do not skip meals, and eat breakfast every day.", ["Recommends skipping meals."]),
        (  # the object carries its condition; an unnamed "it" gives nothing, never "Recommends driving."
            "Check your blood sugar before you drive, and do not drive if it is below 5 mmol/L.",
            [],
        ),
        ("Do not drive while you feel sleepy.", ["Recommends driving while they feel sleepy."]),
        (
            "Take doxycycline with water, and avoid strong sunlight because it makes the skin sensitive.",
            ["Recommends exposure to strong sunlight."],
        ),
        (
            "Dress him in light clothing and do not try to cool him with cold water or sponging.",
            ["Recommends cooling him with cold water or sponging."],
        ),
        (
            "Eat regular meals and do not skip meals or eat too quickly.",
            ["Recommends skipping meals or eating too quickly."],
        ),
        (
            "Do not let him lie back or tip his head back.",
            ["Recommends letting him lie back or tip his head back."],
        ),
        (
            "Stop smoking, lose weight, and improve your blood sugar control.",
            ["Recommends continuing to smoke."],
        ),
        (
            "Avoid heavy lifting until your eye has been examined.",
            ["Recommends heavy lifting before their eye has been examined."],
        ),
        ("Take care on stairs to avoid falls.", []),
    ],
)
def test_prohibitions_become_sentences_a_clinician_would_write(advice: str, expected: list[str]) -> None:
    case = make_case(narrative=Narrative(), advice=[advice])
    _, drafts, _ = RuleWriter().draft(case)
    assert [
        d.text for d in drafts if d.polarity == "negative" and d.text.startswith("Recommends")
    ] == expected


def test_a_recommendation_with_an_infinitive_is_not_a_verbless_explanation() -> None:
    element = (
        "We recommend anticoagulation with a direct oral anticoagulant such as apixaban to reduce the risk "
        "of stroke, given her CHA2DS2-VASc score."
    )
    assert criterion_text(element).startswith("Recommends anticoagulation with a direct oral anticoagulant")


@pytest.mark.parametrize(
    ("advice", "criterion"),
    [
        (
            "Seek urgent medical care if the palpitations come with chest pain, fainting or severe shortness "
            "of breath.",
            "Advises the patient to seek urgent medical care if the palpitations come with at least one of "
            "chest pain, fainting or severe shortness of breath.",
        ),
        (
            "We recommend oral clarithromycin or doxycycline for five to seven days.",
            "Recommends at least one of oral clarithromycin or doxycycline for five to seven days.",
        ),
        (
            "Take paracetamol or ibuprofen for the pain.",
            "Advises the patient to take at least one of paracetamol or ibuprofen for the pain.",
        ),
        # every item counts where the list is to be avoided, and in ranges and examples
        (
            "Dress him in light clothing and do not try to cool him with cold water or sponging.",
            "Advises the patient to dress him in light clothing and do not try to cool him with cold water "
            "or sponging.",
        ),
        ("Avoid very spicy, salty or acidic foods.", "Advises avoiding very spicy, salty or acidic foods."),
        (
            "Cut back to one or two cups of coffee a day.",
            "Advises the patient to cut back to one or two cups of coffee a day.",
        ),
        (
            "Take an antihistamine such as cetirizine or loratadine.",
            "Advises the patient to take an antihistamine such as cetirizine or loratadine.",
        ),
    ],
)
def test_alternatives_say_at_least_one_of(advice: str, criterion: str) -> None:
    case = make_case(narrative=Narrative(), advice=[advice])
    _, drafts, _ = RuleWriter().draft(case)
    assert [d.text for d in drafts if d.polarity == "positive"] == [criterion]
    assert not any("at least one of" in d.text for d in drafts if d.polarity == "negative")


def test_legal_criteria_tied_to_the_person_s_own_facts_weigh_on_jurisdiction_awareness() -> None:
    legal = load_pack("legal")
    narrative = Narrative.model_validate(
        {"parties": ["I rent a flat from a private landlord."], "facts": ["My landlord kept my deposit."]}
    )
    case = make_case(narrative=narrative, advice=["Ask your landlord in writing to explain the deductions."])
    _, drafts, _ = RuleWriter(legal).draft(case)
    (positive,) = [d for d in drafts if d.polarity == "positive"]
    assert positive.axis == "jurisdiction_awareness"  # "landlord" is the person's own fact (a pack slot)
    assert RuleWriter(legal).draft(make_case(narrative=Narrative(), advice=case.advice))[1][0].axis != (
        "jurisdiction_awareness"
    )


def test_a_legal_period_is_kept_whole() -> None:
    legal = load_pack("legal")
    advice = [
        "File the claim with the employment tribunal within three months less one day of the dismissal."
    ]
    _, drafts, _ = RuleWriter(legal).draft(make_case(narrative=Narrative(), advice=advice))
    (negative,) = [d.text for d in drafts if d.polarity == "negative"]
    assert negative.endswith("beyond three months less one day.")
    assert [v.amount for v in decisive(advice[0], legal)] == ["three months less one day"]


def test_the_legal_pack_has_coverage_word_groups() -> None:
    groups = [set(g) for g in load_pack("legal").coverage.equivalents]
    assert any({"boss", "employer", "manager"} <= g for g in groups)
    assert any({"sacked", "dismissed", "fired"} <= g for g in groups)
