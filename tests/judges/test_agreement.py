"""Grader agreement: metrics against hand-computed values, label files, grading labelled items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from livemed.errors import InputFileError
from livemed.grade.lexical import LexicalGrader
from livemed.interop.labels import LabelItem, parse_label, read_labels
from livemed.judges.agreement import grade_items, metrics
from livemed.models import LLM, Engine
from livemed.models.fake import FakeModel


def test_metrics_match_hand_computed_values() -> None:
    # 10 items: TP=4 (met/met), FN=1, FP=2, TN=3
    human = [True] * 5 + [False] * 5
    predicted = [True, True, True, True, False, True, True, False, False, False]
    result = metrics(human, predicted)
    met, not_met = result.per_class["met"], result.per_class["not met"]
    assert (met.precision, met.recall, met.support) == pytest.approx((4 / 6, 4 / 5, 5))
    assert (not_met.precision, not_met.recall) == pytest.approx((3 / 4, 3 / 5))
    f1_met = 2 * (4 / 6) * (4 / 5) / (4 / 6 + 4 / 5)  # 0.7273
    f1_not = 2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5)  # 0.6667
    assert result.macro_f1 == pytest.approx((f1_met + f1_not) / 2)
    # kappa: p_o = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; (0.7 - 0.5) / 0.5 = 0.4
    assert result.kappa == pytest.approx(0.4)
    assert result.accuracy == pytest.approx(0.7)


def test_perfect_and_degenerate_agreement() -> None:
    assert metrics([True, False], [True, False]).kappa == pytest.approx(1.0)
    constant = metrics([True, True], [True, True])
    assert constant.kappa is None  # 0/0: undefined, not a number pretending to be one
    assert constant.per_class["not met"].support == 0
    with pytest.raises(ValueError, match="same, non-zero"):
        metrics([], [])


@pytest.mark.parametrize(
    ("value", "met"),
    [
        ("Entailment", True),
        ("neutral", False),
        ("Contradiction", False),
        ("met", True),
        (0, False),
        (True, True),
    ],
)
def test_labels(value: object, met: bool) -> None:
    assert parse_label(value) is met


def test_reads_kqa_nli_csv_and_generic_files(tmp_path: Path) -> None:
    kqa = tmp_path / "nli.csv"
    kqa.write_text(
        "Question,llm_x,answer,claim,category_x,majority_label,label_0,label_1,label_2\n"
        'What is Lexapro?,gpt4,"Lexapro is an SSRI antidepressant.",Escitalopram is an SSRI,must_have,'
        "Entailment,Entailment,Entailment,Neutral\n"
        "What is Lexapro?,gpt4,It is a vitamin.,Escitalopram is an SSRI,must_have,Contradiction,x,y,z\n"
        "What is Lexapro?,gpt4,It is a vitamin.,Escitalopram is an SSRI,must_have,Unsure,x,y,z\n"
    )
    items = list(read_labels(kqa))
    assert isinstance(items[0], LabelItem)
    assert items[0].label is True
    assert items[0].question == "What is Lexapro?"
    assert isinstance(items[1], LabelItem)
    assert items[1].label is False
    assert isinstance(items[2], InputFileError)
    assert items[2].line == 4
    generic = tmp_path / "labels.jsonl"
    generic.write_text(
        json.dumps({"response": "Rest.", "criterion": "Advises rest", "label": "met"}) + "\n" + "{oops\n"
    )
    good, bad = list(read_labels(generic))
    assert isinstance(good, LabelItem)
    assert good.label is True
    assert isinstance(bad, InputFileError)
    assert bad.line == 2
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b\n1,2\n")
    with pytest.raises(InputFileError, match="needs columns"):
        list(read_labels(wrong))


def verdict(met: bool) -> str:
    return json.dumps({"explanation": "scripted", "criteria_met": met})


async def test_a_failed_grader_call_is_no_verdict_and_an_unparsable_one_is_not_met() -> None:
    items = [
        LabelItem("Take colchicine.", "Advises colchicine", True, question="toe pain"),
        LabelItem("Rest.", "Advises colchicine", False),
        LabelItem("Take colchicine.", "Advises colchicine", True),
    ]
    replies = [verdict(True), verdict(False), "garbled", "garbled again"]
    llm = LLM(Engine(), FakeModel("fake/judge", responses=replies))
    predicted, reasons = await grade_items(items, llm)
    assert predicted == [True, False, False]
    assert reasons == {"unparsable": 1}
    assert "<<<DATA turn role=user n=1>>>\ntoe pain\n<<<END DATA>>>" in llm.model.calls[0][0][0]["content"]  # type: ignore[attr-defined]
    lexical, none = await grade_items(items, LexicalGrader())
    assert lexical == [True, False, True]
    assert none == {}
    dead = LLM(Engine(), FakeModel("fake/dead", responses=[verdict(True)]))  # then exhausted
    verdicts, why = await grade_items(items, dead)
    assert verdicts.count(None) == 2  # no call succeeded for them: no verdict, not "not met"
    assert why == {"call_failed": 2}


def test_reads_healthbench_meta_eval_lines(tmp_path: Path) -> None:
    base = {
        "prompt": [{"role": "user", "content": "Is my chest pain serious?"}],
        "completion": "Call emergency services now.",
        "rubric": "Advises calling emergency services.",
        "category": "cluster:emergency_referrals",
    }
    path = tmp_path / "meta.jsonl"
    rows = [
        {**base, "binary_labels": [True, True, False]},
        {**base, "binary_labels": [False, False, True]},
        {**base, "binary_labels": [True, False]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    met, not_met, tie = list(read_labels(path))
    assert isinstance(met, LabelItem)
    assert met.label is True
    assert met.question == "Is my chest pain serious?"
    assert met.group == "cluster:emergency_referrals"
    assert isinstance(not_met, LabelItem)
    assert not_met.label is False
    assert isinstance(tie, InputFileError)
    assert "no majority" in str(tie)
