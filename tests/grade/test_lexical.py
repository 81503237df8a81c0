"""`offline/lexical`: hand-made cases, the K-QA labelled set and its split, agreement on held-out items."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from benchmarks import kqa_labels

from livemed.grade.lexical import MATCH_THRESHOLD, match, terms
from livemed.judges.agreement import metrics

LEXAPRO = (
    "Lexapro is an antidepressant of the SSRI class. Common side effects include nausea and headache. "
    "It is not approved for children under 12 years of age."
)


@pytest.mark.parametrize(
    ("response", "criterion", "met"),
    [
        # brand and generic names fold together; plural abbreviations too
        (LEXAPRO, "Escitalopram is an antidepressant of the SSRIs class", True),
        (LEXAPRO, "Side effects of escitalopram include headache", True),
        # British spelling and lay words
        ("Diarrhoea and drowsiness are common.", "Diarrhea and sedation are common", True),
        (
            "You should see a doctor if the pain is severe.",
            "Seek medical attention if the pain is severe",
            True,
        ),
        # the discriminating word is missing: the topic alone is not enough
        (LEXAPRO, "Escitalopram is approved for generalized anxiety disorder in adolescents", False),
        # negation on either side
        (LEXAPRO, "Escitalopram is approved for children under 12 years of age", False),
        (LEXAPRO, "Escitalopram is not approved for children under 12 years of age", True),
        ("Lexapro is not an antidepressant.", "Escitalopram is an antidepressant", False),
        # an altered number or drug
        (LEXAPRO, "Escitalopram is not approved for children under 18 years of age", False),
        (LEXAPRO, "Sertraline is an antidepressant of the SSRI class", False),
        # unrelated
        (LEXAPRO, "Ivermectin is the oral treatment for scabies", False),
        # "allergic reaction" is a side effect, not a contraindication; "allergic to" still is
        (
            "Robaxin can cause an allergic reaction with swelling of the face.",
            "Robaxin can cause an allergic reaction with swelling of the face or throat",
            True,
        ),
        ("You are allergic to penicillin, so use clarithromycin.", "Recommends penicillin", False),
    ],
)
def test_hand_made_cases(response: str, criterion: str, met: bool) -> None:
    assert match(response, criterion)[0] is met, match(response, criterion)[1]


def test_mismatches_are_explained() -> None:
    assert "names sertraline" in match(LEXAPRO, "Sertraline is an SSRI")[1]
    assert "18" in match(LEXAPRO, "Not approved under 18 years of age")[1]
    # a criterion number is only a mismatch when the response gives numbers of its own
    assert match("Escitalopram is approved for adults.", "Escitalopram is approved for adults over 18")[0]


def test_weights_favour_what_a_statement_is_about() -> None:
    weights = terms("Side effects of escitalopram include headache")
    assert weights["escita"] > weights["headac"] > weights["effect"]
    assert 0 < MATCH_THRESHOLD < 1


def test_negation_and_alteration_rules() -> None:
    assert kqa_labels.negate("Lexapro is an SSRI.") == "Lexapro is not an SSRI."
    assert kqa_labels.negate("BV is not an STD.") == "BV is an STD."
    assert kqa_labels.negate("Metformin has been shown to help") == "Metformin has not been shown to help"
    assert kqa_labels.negate("Fever has many causes") == "Fever does not have many causes"
    assert kqa_labels.negate("Drink water") is None
    rng = random.Random(0)
    altered = kqa_labels.alter("Take ibuprofen twice", "Take ibuprofen twice a day.", rng)
    assert altered is not None
    assert "ibuprofen" not in altered
    assert kqa_labels.alter("Wait 2 weeks", "Wait 2 weeks.", rng) == "Wait 8 weeks"
    assert kqa_labels.alter("Rest", "Rest.", rng) is None


KQA_ROWS: list[dict[str, Any]] = [
    {
        "Question": f"question {n}?",
        "Free_form_answer": f"Drug{n} treats illness{n}. It is safe. Take 2 ibuprofen tablets for pain{n}.",
        "Must_have": [f"Drug{n} treats illness{n}", f"Ibuprofen is taken as 2 tablets for pain{n}"],
    }
    for n in range(12)
]


def test_the_set_and_its_split_are_deterministic() -> None:
    first, second = kqa_labels.build(KQA_ROWS), kqa_labels.build(KQA_ROWS)
    assert first == second
    assert kqa_labels.split_of("question 3?") == kqa_labels.split_of(" question 3? ")
    splits = {kqa_labels.split_of(r["Question"]) for r in KQA_ROWS}
    assert splits == set(kqa_labels.SPLITS)
    for item in first:
        assert item["split"] == kqa_labels.split_of(item["question"])
    by_split = {split: {i["qid"] for i in first if i["split"] == split} for split in kqa_labels.SPLITS}
    assert not by_split["dev"] & by_split["heldout"]  # a question's items never straddle the split
    for item in first:  # unrelated statements come from the same split, so nothing leaks across
        if item["kind"] == "unrelated":
            owners = {i["qid"] for i in first if i["kind"] == "own" and i["criterion"] == item["criterion"]}
            assert owners <= by_split[item["split"]]
    kinds = {item["kind"] for item in first}
    assert kinds == {"own", "unrelated", "negated", "altered", "removed"}
    assert {item["label"] for item in first if item["kind"] == "own"} == {"met"}
    assert {item["label"] for item in first if item["kind"] != "own"} == {"not met"}


def test_written_set_reads_back_as_labels(tmp_path: Path) -> None:
    from livemed.interop.labels import LabelItem, read_labels

    path = tmp_path / "set.jsonl"
    items = kqa_labels.build(KQA_ROWS)
    assert kqa_labels.write_jsonl(items, path) == len(items)
    read = list(read_labels(path))
    assert all(isinstance(i, LabelItem) for i in read)
    assert [i.label for i in read if isinstance(i, LabelItem)] == [i["label"] == "met" for i in items]


def _heldout(shared_data: Path) -> list[dict[str, object]]:
    rows = kqa_labels.read_kqa(shared_data / "k-qa" / "questions_w_answers.jsonl")
    return [i for i in kqa_labels.build(rows) if i["split"] == "heldout"]


@pytest.mark.shared_data
def test_heldout_agreement_at_shipped_defaults(shared_data: Path) -> None:
    items = _heldout(shared_data)
    assert len(items) > 1000
    human = [i["label"] == "met" for i in items]
    result = metrics(human, [match(str(i["response"]), str(i["criterion"]))[0] for i in items])
    floor = metrics(human, [False] * len(items))
    assert result.macro_f1 >= 0.60
    assert result.macro_f1 >= floor.macro_f1 + 0.3
    assert result.per_class["met"].recall >= 0.5


@pytest.mark.shared_data
def test_heldout_agreement_beats_the_old_grader(shared_data: Path) -> None:
    from benchmarks import lexical_grader

    try:
        old = lexical_grader.baseline_grader(lexical_grader.BASELINE_REV)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip(f"git revision {lexical_grader.BASELINE_REV} is not in this clone")
    items = _heldout(shared_data)
    human = [i["label"] == "met" for i in items]
    new = metrics(human, [match(str(i["response"]), str(i["criterion"]))[0] for i in items])
    before = metrics(human, [old.match(str(i["response"]), str(i["criterion"]))[0] for i in items])
    assert new.macro_f1 >= before.macro_f1 + 0.05
    assert new.per_class["met"].recall > before.per_class["met"].recall
