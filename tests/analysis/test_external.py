"""Contamination on external per-item results: the reader, the cutoff files and the Python API.

The small inputs are worked by hand; the larger ones are GENERATED data (seeded, labelled as such),
never real items with invented dates.
"""

from __future__ import annotations

import csv
import json
import re
import textwrap
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from livemed.analysis.collect import load_scores
from livemed.analysis.contamination import AnalysisSettings, ContaminationResult, analyse
from livemed.analysis.cutoffs import CutoffEntry, load_cutoffs, parse_cutoffs
from livemed.analysis.external import (
    contamination_check,
    parse_columns,
    parse_published,
    parse_score,
    read_scores,
)
from livemed.common import closed_form
from livemed.errors import ConfigError, InputFileError
from livemed.records import Score
from livemed.store import Store
from tests.analysis.builders import CUTOFFS_TOML, study
from tests.conftest import REPO_ROOT

SMALL = AnalysisSettings(resamples=1000, permutations=1000, min_post=2, min_pre=2)
FAST = AnalysisSettings(resamples=1000, permutations=1000, min_post=5, min_pre=5)
CUTOFF = {"m": CutoffEntry(cutoff=date(2024, 3, 31), source="test")}

# Hand-worked: model m, cutoff 2024-03-31 (a case on that day is pre-cutoff). Item a has two samples
# (1 and 0: mean 0.5). Pre = a 0.5, b 1, c 0 → 0.5; post = d 0, e 1, f 0 → 1/3; full = 2.5/6.
# Item f is 23:30 at UTC−5 on June 1st: June 2nd in UTC, post-cutoff either way.
HAND_CSV = """\
item_id,published,model,score
a,2024-01-10,m,1
a,2024-01-10,m,0
b,2024-02-10T08:00:00Z,m,true
c,2024-03-31,m,FALSE
d,2024-04-01,m,0
e,2024-05-01,m,1
f,2024-06-01T23:30:00-05:00,m,0
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_hand_worked_csv_with_samples_averaged(tmp_path: Path) -> None:
    read = read_scores(write(tmp_path / "s.csv", HAND_CSV))
    assert read.rows_read == 7
    assert read.left_out == []
    by_item = {r.case_id: r for r in read.rows}
    assert by_item["a"].score == 0.5
    assert by_item["a"].samples == 2
    assert [by_item[i].score for i in "bcdef"] == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert by_item["f"].published == datetime(2024, 6, 2, 4, 30, tzinfo=UTC)
    row = analyse(read.rows, CUTOFF, SMALL).rows[0]
    assert (row.status, row.n_pre, row.n_post, row.n_full) == ("tested", 3, 3, 6)
    assert row.mean_pre == pytest.approx(0.5)
    assert row.mean_post == pytest.approx(1 / 3)
    assert row.mean_full == pytest.approx(2.5 / 6)
    assert row.full_minus_post == pytest.approx(2.5 / 6 - 1 / 3)
    assert row.pre_minus_post == pytest.approx(1 / 6)
    assert row.p_mannwhitney == pytest.approx(closed_form.mann_whitney_greater([0.5, 1, 0], [0, 1, 0]))
    assert row.cliffs_delta == pytest.approx(closed_form.cliffs_delta([0.5, 1, 0], [0, 1, 0]))


def test_jsonl_with_custom_columns_and_continuous_scores(tmp_path: Path) -> None:
    lines = [
        {"qid": 1, "date": "2024-01-05", "llm": "m", "acc": 0.9},
        {"qid": 2, "date": "2024-02-05", "llm": "m", "acc": 0.7},
        {"qid": 3, "date": "2024-05-05", "llm": "m", "acc": 0.4},
        {"qid": 4, "date": "2024-06-05", "llm": "m", "acc": "0.2"},
        {"qid": 4, "date": "2024-06-05", "llm": "m", "acc": 0.4},
    ]
    path = write(tmp_path / "results.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    columns = parse_columns(["item_id=qid", "published=date", "model=llm", "score=acc"])
    read = read_scores(path, columns)
    assert [(r.case_id, r.score) for r in read.rows] == [
        ("1", 0.9),
        ("2", 0.7),
        ("3", 0.4),
        ("4", 0.30000000000000004),
    ]
    row = analyse(read.rows, CUTOFF, SMALL).rows[0]
    assert row.mean_pre == pytest.approx(0.8)
    assert row.mean_post == pytest.approx(0.35)
    assert row.pre_minus_post == pytest.approx(0.45)
    assert read.context()["columns"] == {
        "item_id": "qid",
        "published": "date",
        "model": "llm",
        "score": "acc",
    }


def test_format_is_detected_by_content_without_a_known_extension(tmp_path: Path) -> None:
    jsonl = write(
        tmp_path / "scores.txt", '{"item_id": "a", "published": "2024-01-01", "model": "m", "score": 1}\n'
    )
    assert [r.case_id for r in read_scores(jsonl).rows] == ["a"]
    table = write(tmp_path / "scores.dat", "item_id,published,model,score\nb,2024-01-01,m,0\n")
    assert [r.case_id for r in read_scores(table).rows] == ["b"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, 1.0),
        (False, 0.0),
        (1, 1.0),
        ("0", 0.0),
        ("1", 1.0),
        ("True", 1.0),
        (" false ", 0.0),
        ("0.25", 0.25),
    ],
)
def test_scores_binary_and_continuous(value: object, expected: float) -> None:
    assert parse_score(value) == expected


@pytest.mark.parametrize("value", ["yes", "", "nan", "inf", None, [1]])
def test_bad_scores(value: object) -> None:
    with pytest.raises(ValueError, match=r"not a|expected a number"):
        parse_score(value)


def test_dates_iso_dates_and_datetimes_only() -> None:
    assert parse_published("2024-03-01") == datetime(2024, 3, 1, tzinfo=UTC)
    assert parse_published("2024-03-01T10:00:00") == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert parse_published(date(2024, 3, 1)) == datetime(2024, 3, 1, tzinfo=UTC)
    for bad in ["March 3, 2024", "2024", "03/01/2024", "2024-02-30", 1709251200]:
        with pytest.raises(ValueError, match=r"(not an|expected an) ISO date"):
            parse_published(bad)


BAD_CSV = """\
item_id,published,model,score
a,2024-01-10,m,1
b,,m,1
c,March 2024,m,0
d,2024-04-01,m,maybe
e,2024-05-01,,1
f,2024-06-01,m,
a,2024-01-11,m,1
g,2024-07-01,m,0
"""


def test_bad_rows_are_left_out_and_named_with_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", BAD_CSV)
    read = read_scores(path)
    assert read.rows_read == 8
    assert [(x.line, x.item_id, x.reason) for x in read.left_out] == [
        (3, "b", "missing date"),
        (4, "c", "bad date"),
        (5, "d", "bad score"),
        (6, "e", "missing model"),
        (7, "f", "missing score"),
        (8, "a", "conflicting date"),
    ]
    assert sorted(r.case_id for r in read.rows) == ["a", "g"]
    lines = read.left_out_lines()
    assert f"missing date: 1 row(s): {path}:3 (b)" in lines
    assert any(line.startswith(f"bad date: 1 row(s): {path}:4 (c: not an ISO date") for line in lines)
    assert any(f"{path}:5 (d: not a number or true/false: 'maybe')" in line for line in lines)
    assert read.context()["left_out_by_reason"]["bad date"] == 1


def test_only_the_first_few_left_out_ids_are_listed(tmp_path: Path) -> None:
    body = "".join(f"q{i},,m,1\n" for i in range(10))
    read = read_scores(write(tmp_path / "s.csv", "item_id,published,model,score\n" + body))
    (line,) = read.left_out_lines()
    assert line.startswith("missing date: 10 row(s): ")
    assert "(q2)" in line
    assert "(q3)" not in line
    assert line.endswith("and 7 more")


def test_unreadable_jsonl_lines_are_left_out(tmp_path: Path) -> None:
    text = '{"item_id": "a", "published": "2024-01-01", "model": "m", "score": 1}\nnot json\n[1, 2]\n'
    read = read_scores(write(tmp_path / "s.jsonl", text))
    assert [(x.line, x.reason) for x in read.left_out] == [(2, "unreadable line"), (3, "unreadable line")]
    assert len(read.rows) == 1


def test_a_missing_column_names_it_and_the_option(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "item_id,date,model,score\na,2024-01-01,m,1\n")
    with pytest.raises(
        InputFileError, match=r"no column 'published' for published .*--column published=COLUMN"
    ):
        read_scores(path)
    jsonl = write(tmp_path / "s.jsonl", '{"item_id": "a", "published": "2024-01-01", "model": "m"}\n')
    with pytest.raises(InputFileError, match="no column 'score' for score"):
        read_scores(jsonl)
    with pytest.raises(InputFileError, match="no column 'acc' for score"):
        read_scores(path, parse_columns(["published=date", "score=acc"]))


def test_column_option_errors() -> None:
    with pytest.raises(ConfigError, match="NAME=COLUMN"):
        parse_columns(["score"])
    with pytest.raises(ConfigError, match="unknown name 'grade'"):
        parse_columns(["grade=acc"])


def test_cutoff_files_toml_and_csv(tmp_path: Path) -> None:
    toml = write(
        tmp_path / "c.toml", 'include_defaults = false\n[models."m"]\ncutoff = 2024-03-31\nsource = "log"\n'
    )
    assert load_cutoffs(toml) == {"m": CutoffEntry(cutoff=date(2024, 3, 31), source="log")}
    table = write(tmp_path / "c.csv", "model,cutoff,source\nm,2024-03-31,\nother,2023-12-31,model card\n")
    loaded = load_cutoffs(table)
    assert loaded["m"] == CutoffEntry(cutoff=date(2024, 3, 31), source="c.csv, line 2")
    assert loaded["other"].source == "model card"
    assert "gpt-4o" in loaded  # like a TOML file with include_defaults = true: on top of the bundled ones


def test_bad_csv_cutoff_files(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"c.csv:1: .*missing: cutoff"):
        load_cutoffs(write(tmp_path / "c.csv", "model,date\nm,2024-01-01\n"))
    with pytest.raises(InputFileError, match=r"c.csv:3: cutoff must be a date"):
        load_cutoffs(write(tmp_path / "c.csv", "model,cutoff\nm,2024-01-01\nn,Oct 2023\n"))


def test_the_same_scores_through_the_store_and_a_file_give_identical_results(tmp_path: Path) -> None:
    registry = parse_cutoffs(CUTOFFS_TOML, "fixture").models
    with Store(tmp_path / "s.db") as store:
        store.put(study(n_cases=100))
        scored = load_scores(store)
        exported = list(store.iter(Score))
    path = tmp_path / "exported.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "published", "model", "score"])
        for s in exported:
            assert s.published is not None
            writer.writerow([s.case_id, s.published.date().isoformat(), s.model, repr(s.score)])
    read = read_scores(path)
    assert read.left_out == []
    assert len(read.rows) == len(scored.rows) == 300
    assert [(r.model, r.case_id, r.score, r.published) for r in read.rows] == [
        (r.model, r.case_id, r.score, r.published) for r in scored.rows
    ]
    from_store = analyse(scored.rows, registry, FAST)
    from_file = analyse(read.rows, registry, FAST)
    assert from_file == from_store
    assert {r.model: r.status for r in from_file.rows}["fake/strong"] == "tested"
    assert {r.model: r.verdict for r in from_file.rows}["fake/strong"] == "not distinguishable"


def generated(n: int, drop: float, seed: int = 0) -> tuple[list[dict[str, object]], list[int]]:
    """GENERATED data: n items dated 2024-01-01 + 2 days each; a 0/1 score whose success rate is
    0.5 on items after 2024-07-01 and 0.5 + `drop` up to then."""
    rng = np.random.default_rng(seed)
    days = [date.fromordinal(date(2024, 1, 1).toordinal() + 2 * i) for i in range(n)]
    scores = [int(rng.random() < (0.5 + drop if d <= date(2024, 7, 1) else 0.5)) for d in days]
    return [{"id": f"g{i}", "publish_date": d} for i, d in enumerate(days)], scores


def test_api_detects_a_planted_drop_and_not_an_absent_one() -> None:
    items, planted = generated(200, 0.3)
    _, flat = generated(200, 0.0, seed=1)
    result = contamination_check(
        items, date(2024, 7, 1), scores={"planted": planted, "flat": flat}, settings=FAST
    )
    assert isinstance(result, ContaminationResult)
    rows = {r.model: r for r in result.rows}
    assert rows["planted"].significant is True
    assert rows["planted"].verdict == "significant drop (no drift control)"
    assert rows["flat"].significant is False
    assert rows["flat"].verdict == "no significant drop"
    assert rows["planted"].cutoff_source == "given to contamination_check"
    assert result.summary.n_tested == 2
    assert result.summary.n_significant == 1


def test_api_too_few_post_cutoff_items_is_insufficient_data() -> None:
    items, scores = generated(100, 0.3)  # items up to day 198: 9 after 2024-07-01, fewer than 50
    result = contamination_check(items, date(2024, 7, 1), scores={"m": scores})
    (row,) = result.rows
    assert row.status == "insufficient data"
    assert row.verdict is None
    assert row.n_post < 50


def test_api_with_an_evaluation_function_in_the_methods_shape() -> None:
    items = [
        {"question": f"q{i}", "answer": "yes", "publish_date": f"2024-0{1 + i % 6}-15", "id": i}
        for i in range(12)
    ]
    calls: list[str] = []

    def evaluate(item: Mapping[str, object]) -> float:
        calls.append(str(item["question"]))
        return 1.0 if str(item["publish_date"]) <= "2024-03-31" else 0.0

    result = contamination_check(
        items, {"my-model": date(2024, 3, 31)}, evaluate=evaluate, model="my-model", settings=SMALL
    )
    (row,) = result.rows
    assert len(calls) == 12
    assert (row.model, row.n_pre, row.n_post, row.mean_pre, row.mean_post) == ("my-model", 6, 6, 1.0, 0.0)
    assert row.pre_minus_post == 1.0


def test_api_scores_by_item_id_with_samples_and_models_without_cutoff() -> None:
    items = [
        {"id": x, "publish_date": d}
        for x, d in [("a", "2024-01-01"), ("b", "2024-02-01"), ("c", "2024-05-01"), ("d", "2024-06-01")]
    ]
    scores: dict[str, Any] = {"m": {"a": [1, 0], "b": 1, "c": 0, "d": 0}, "unknown": [1, 1, 1, 1]}
    result = contamination_check(items, CUTOFF, scores=scores, settings=SMALL)
    rows = {r.model: r for r in result.rows}
    assert rows["m"].mean_pre == pytest.approx(0.75)
    assert rows["unknown"].status == "no cutoff"


def test_api_bad_dates_raise_or_are_left_out_with_a_warning() -> None:
    items = [{"id": "a", "publish_date": "2024-01-01"}, {"id": "b", "publish_date": "soon"}, {"id": "c"}]
    calls: list[object] = []

    def evaluate(item: Mapping[str, object]) -> float:
        calls.append(item["id"])
        return 1.0

    with pytest.raises(
        ValueError, match=r"bad date: 1 row\(s\): items:2 \(b.*missing date: 1 row\(s\): items:3 \(c\)"
    ):
        contamination_check(items, date(2024, 3, 1), evaluate=evaluate)
    assert calls == ["a"]  # items without a usable date are never evaluated
    with pytest.warns(UserWarning, match="bad date"):
        result = contamination_check(items, date(2024, 3, 1), evaluate=evaluate, strict=False)
    assert result.rows[0].n_full == 1


def test_api_needs_exactly_one_score_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        contamination_check([], date(2024, 1, 1))
    with pytest.raises(ValueError, match="scores for m: 1 scores for 2 items"):
        contamination_check([{"publish_date": "2024-01-01"}] * 2, date(2024, 1, 1), scores={"m": [1]})
    with pytest.raises(ValueError, match="no item with id 'zz'"):
        contamination_check(
            [{"id": "a", "publish_date": "2024-01-01"}], date(2024, 1, 1), scores={"m": {"zz": 1}}
        )


def test_real_pubmedqa_years_are_not_dates_so_nothing_is_dated(shared_data: Path) -> None:
    # Real data: PubMedQA PQA-L gives only the YEAR of each abstract. A year is not a date, and
    # livemed never turns it into one (no silent January 1st): every item is reported and left out.
    # The scores are those of a real, trivial baseline: always answer "yes".
    data = json.loads((shared_data / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    items = [{"id": pmid, "publish_date": entry["YEAR"]} for pmid, entry in data.items()]
    always_yes = [float(entry["final_decision"] == "yes") for entry in data.values()]
    no_year = sum(not entry.get("YEAR") for entry in data.values())
    assert len(items) == 1000
    assert sum(always_yes) == 552
    assert no_year == 58  # PQA-L itself has no YEAR for these: "missing date", not "bad date"
    with pytest.raises(
        ValueError, match=r"bad date: 942 row\(s\): items:1 \(21645374: not an ISO date: '2011'\)"
    ) as raised:
        contamination_check(items, date(2012, 12, 31), scores={"always-yes": always_yes})
    assert "missing date: 58 row(s): items:14 (25957366)" in str(raised.value)
    with (
        pytest.warns(UserWarning, match="bad date: 942"),
        pytest.raises(ValueError, match="no item has a usable date"),
    ):
        contamination_check(items, date(2012, 12, 31), scores={"always-yes": always_yes}, strict=False)


def test_the_readme_example_runs_and_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [
        b for b in re.findall(r"```python\n(.*?)```", readme, re.DOTALL) if "contamination_check" in b
    ]
    code = textwrap.dedent(block)
    expected = code.strip().splitlines()[-1].removeprefix("# ")
    exec(compile(code, "README.md", "exec"), {})  # the project's own README example
    assert capsys.readouterr().out.strip() == expected
    assert expected.startswith("tested 91 109")


def test_a_json_array_is_named_as_such(tmp_path: Path) -> None:
    path = write(tmp_path / "scores.json", '[{"item_id": "a"}]\n')
    with pytest.raises(InputFileError, match="a JSON array: write one JSON object per line"):
        read_scores(path)


def test_a_quoted_csv_field_over_two_lines_keeps_the_line_numbers(tmp_path: Path) -> None:
    text = 'item_id,published,model,score,note\na,2024-01-01,m,1,"two\nlines"\nb,someday,m,1,x\n'
    read = read_scores(write(tmp_path / "s.csv", text))
    assert [r.case_id for r in read.rows] == ["a"]
    assert [(x.line, x.item_id, x.reason) for x in read.left_out] == [(4, "b", "bad date")]


def test_api_names_a_bad_item_by_its_position_for_every_model() -> None:
    items = [{"id": "a", "publish_date": "2024-01-01"}, {"id": "b", "publish_date": "2024-13-01"}]
    with pytest.raises(ValueError, match=r"bad date: 2 row\(s\): items:2 \(b: .*\), items:2 \(b: "):
        contamination_check(items, date(2024, 1, 1), scores={"m1": [1, 0], "m2": [0, 1]})
