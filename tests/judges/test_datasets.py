"""Loaders on the real data (../shared/data) and on bad user copies: file:line, skip, go on."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pytest

from livemed.errors import InputFileError
from livemed.judges.datasets import dataset
from livemed.judges.datasets.items import CalcItem, ChoiceItem, PicoItem
from livemed.judges.datasets.pico import load_ebm_nlp, project_set, runs

HEADER = "link,question,opa,opb,opc,opd,ope,answer_idx,answer,explanation\n"


def split(found: list[object]) -> tuple[list[object], list[InputFileError]]:
    return [x for x in found if not isinstance(x, InputFileError)], [
        x for x in found if isinstance(x, InputFileError)
    ]


def test_real_pubmedqa_medqa_medcalc(shared_data: Path) -> None:
    pubmed, bad = split(list(dataset("pubmedqa").load(shared_data / "pubmedqa")))
    assert (len(pubmed), bad) == (1000, [])
    assert isinstance(pubmed[0], ChoiceItem)
    assert pubmed[0].item_id == "21645374"
    assert pubmed[0].answer == "yes"
    medqa, bad = split(list(dataset("medqa").load(shared_data / "medqa" / "us_4options_test.jsonl")))
    assert (len(medqa), bad) == (1273, [])
    assert all(isinstance(i, ChoiceItem) and set(i.options) == set("ABCD") for i in medqa)
    calc, bad = split(list(dataset("medcalc").load(shared_data / "medcalc_bench")))
    assert (len(calc), bad) == (1047, [])
    first = calc[0]
    assert isinstance(first, CalcItem)
    assert (first.calculator_id, first.answer, first.entities["age"]) == (2, "25.238", [87, "years"])


def test_medbullets_bad_rows_are_reported_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "medbullets_op5.csv"
    path.write_text(
        HEADER
        + 'u1,"A 64-year-old man, headache",Acetazolamide,Timolol,Clopidogrel,Mannitol,Pilocarpine,A,'
        + "Acetazolamide,x\n"
        + "u2,Which?,one,two,,,,F,?,x\n"
        + 'u3,"multi\nline question",one,two,three,,,C,three,x\n'
        + "u4,,one,two,,,,A,one,x\n"
        + "u5,Last?,one,two,three,four,,D,four,x\n"
    )
    good, bad = split(list(dataset("medbullets").load(tmp_path)))
    assert [i.answer for i in good] == ["A", "C", "D"]  # type: ignore[attr-defined]
    assert [(e.line, e.detail) for e in bad] == [
        (3, "answer_idx 'F' is not one of the options A, B"),
        (6, "missing field 'question'"),
    ]
    assert str(bad[0]).startswith(f"{path}:3: ")


def test_medcalc_and_medqa_bad_rows(tmp_path: Path, shared_data: Path) -> None:
    with (shared_data / "medcalc_bench" / "test_data_v1.0.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [next(reader) for _ in range(3)]
    rows[1]["Relevant Entities"] = "{not a dict"
    out = tmp_path / "test_data_mine.csv"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    good, bad = split(list(dataset("medcalc").load(out)))
    assert len(good) == 2
    assert len(bad) == 1
    assert bad[0].detail == "Relevant Entities is not a Python dict literal"
    assert bad[0].line is not None
    assert bad[0].line > 2  # the second row starts after the first row's multi-line note
    medqa = tmp_path / "m.jsonl"
    medqa.write_text(
        json.dumps({"question": "Q?", "options": {"A": "x", "B": "y"}, "answer_idx": "B"})
        + "\n{oops\n"
        + json.dumps({"question": "Q?", "options": {"A": "x"}, "answer_idx": "A"})
        + "\n"
    )
    good, bad = split(list(dataset("medqa").load(medqa)))
    assert len(good) == 1
    assert [e.line for e in bad] == [2, 3]


def test_project_pico_set_is_verbatim_and_marked(tmp_path: Path) -> None:
    items, bad = split(list(dataset("pico").load(None)))
    assert not bad
    assert 5 <= len(items) <= 20
    for item in items:
        assert isinstance(item, PicoItem)
        assert all(span in item.text for spans in item.spans.values() for span in spans)
    lines = [json.loads(line) for line in project_set().read_text().splitlines()]
    assert all(line["made_by"].startswith("livemed team") for line in lines)
    bad_file = tmp_path / "pico.jsonl"
    bad_file.write_text(
        json.dumps({"text": "Adults got aspirin.", "P": ["Adults"], "I": ["aspirin"]})
        + "\n"
        + json.dumps({"text": "Adults got aspirin.", "P": ["Children"]})
        + "\n"
        + json.dumps({"text": "x", "O": "not a list"})
        + "\n"
    )
    good, bad = split(list(dataset("pico").load(bad_file)))
    assert len(good) == 1
    assert [(e.line, e.detail) for e in bad] == [
        (2, "P span 'Children' is not verbatim in the text"),
        (3, "field 'O' must be a list of strings"),
    ]


def test_ebm_nlp_reader_takes_the_comparator_from_the_control_label(tmp_path: Path) -> None:
    text = "Children with asthma received budesonide or placebo ; wheeze was measured"
    tokens = text.split()
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "123.tokens").write_text("\n".join(tokens))
    (tmp_path / "documents" / "456.tokens").write_text("a b c")
    base = tmp_path / "annotations" / "aggregated" / "hierarchical_labels"
    labels = {
        "participants": [4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0],
        "interventions": [0, 0, 0, 0, 1, 0, 7, 0, 0, 0, 0],
        "outcomes": [0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0],
    }
    for element, values in labels.items():
        folder = base / element / "test" / "gold"
        folder.mkdir(parents=True)
        (folder / "123.AGGREGATED.ann").write_text(",".join(map(str, values)))
    (base / "outcomes" / "test" / "gold" / "456.AGGREGATED.ann").write_text("1,0")
    good, bad = split(list(load_ebm_nlp(tmp_path)))
    (item,) = good
    assert isinstance(item, PicoItem)
    assert item.spans == {
        "P": ["Children with asthma"],
        "I": ["budesonide"],
        "C": ["placebo"],
        "O": ["wheeze"],
    }
    assert len(bad) == 1
    assert "has 2 labels for 3 tokens" in bad[0].detail
    assert runs(["a", "b", "c"], [1, 1, 0]) == ["a b"]


def test_a_missing_path_is_one_user_error() -> None:
    with pytest.raises(InputFileError, match="--path is required for medqa"):
        list(dataset("medqa").load(None))


def test_entities_of_every_medcalc_row_parse(shared_data: Path) -> None:
    with (shared_data / "medcalc_bench" / "test_data_v1.0.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            assert isinstance(ast.literal_eval(row["Relevant Entities"]), dict)
