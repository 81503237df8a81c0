"""`livemed judges build|run|report|validate|certify|compare` in process, and the card line elsewhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import UserError
from livemed.models.registry import PROVIDERS
from livemed.records import Grade, JudgeVerdict, Pair, ValidityCard
from livemed.store import Store

HEADER = "link,question,opa,opb,opc,opd,ope,answer_idx,answer,explanation\n"


def refused(store: Path, *args: str) -> str:
    """The one-line error of a command that exits 2 (a UserError: bad input, nothing written)."""
    result = CliRunner().invoke(app, ["--store", str(store), *args], env={"COLUMNS": "250"})
    assert isinstance(result.exception, UserError), result.output + repr(result.exception)
    assert result.exception.exit_code == 2
    return " ".join((result.output + str(result.exception)).split())


def run(store: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--store", str(store), *args], env={"COLUMNS": "250"})
    assert result.exit_code == code, result.output + repr(result.exception)
    failure = (
        f" {result.exception}" if result.exception and not isinstance(result.exception, SystemExit) else ""
    )
    return " ".join((result.output + failure).split())


@pytest.fixture
def fake_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.judges.helpers:scripted_provider")


def answered_store(tmp_path: Path, shared_data: Path) -> Path:
    """Three K-QA cases with offline rubrics, answered by offline/reference and offline/empty."""
    store = tmp_path / "s.db"
    kqa = str(shared_data / "k-qa" / "questions_w_answers.jsonl")
    run(store, "import-kqa", kqa, "--published", "2024-01-01", "--limit", "3")
    run(store, "rubrics", "--writer", "offline/rules")
    for model in ("offline/reference", "offline/empty"):
        run(store, "answer", "--model", model)
    return store


def test_build_exports_pairs_with_a_data_card(tmp_path: Path, shared_data: Path) -> None:
    store, out = tmp_path / "s.db", tmp_path / "pairs.jsonl"
    text = run(
        store,
        "judges",
        "build",
        "--dataset",
        "medcalc",
        "--path",
        str(shared_data / "medcalc_bench"),
        "--limit",
        "5",
        "--out",
        str(out),
    )
    assert "medcalc: 5 items" in text
    assert "licence: CC BY-SA 4.0 (share-alike)" in text
    card = json.loads((tmp_path / "pairs.jsonl.card.json").read_text())
    assert card["share_alike"] == ["medcalc"]
    lines = out.read_text().splitlines()
    assert sum(card["pairs"].values()) == len(lines)
    with Store(store) as s:
        assert s.count()["judge_pair"] == len(lines)
        assert {p.tertile for p in s.iter(Pair)} == {"hard", "medium", "easy"}


def test_bad_medbullets_rows_are_skipped_and_exit_1(tmp_path: Path) -> None:
    csv = tmp_path / "mb.csv"
    csv.write_text(HEADER + "u,Q1?,a,b,c,d,e,B,b,x\nu,Q2?,a,b,,,,Z,?,x\nu,Q3?,a,b,c,,,C,c,x\n")
    text = run(tmp_path / "s.db", "judges", "build", "--dataset", "medbullets", "--path", str(csv), code=1)
    assert f"{csv}:3: answer_idx 'Z'" in text
    assert "1 item(s) could not be read and were skipped" in text
    assert "medbullets: 2 items" in text


def test_always_a_baseline_shows_position_bias_in_the_report(tmp_path: Path, shared_data: Path) -> None:
    store = tmp_path / "s.db"
    run(store, "judges", "build", "--dataset", "medqa", "--path", str(shared_data / "medqa"), "--limit", "10")
    run(store, "judges", "build", "--dataset", "pico")
    text = run(store, "judges", "run", "--judge", "offline/always-a", "--samples", "2")
    assert "wrote" in text
    run(store, "judges", "run", "--judge", "offline/lexical-overlap")
    report = tmp_path / "r.json"
    text = run(store, "judges", "report", "--json", str(report))
    assert "Pairwise correctness" in text
    assert "Correctness by rank-gap tertile" in text
    data = json.loads(report.read_text())
    assert data["missing"] is None  # every sample asked was answered
    biased = data["judges"]["offline/always-a · pairwise"]
    assert biased["average"]["consistent"]["value"] == 0.0
    assert biased["average"]["flip_rate"]["value"] == 1.0
    assert biased["average"]["majority"]["value"] == pytest.approx(0.5, abs=0.01)
    assert biased["pooled"]["invalid_share"]["value"] == 0.0
    assert biased["coverage"]["samples_missing"] == 0
    assert set(data["judges"]) == {"offline/always-a · pairwise", "offline/lexical-overlap · pairwise"}
    again = run(store, "judges", "run", "--judge", "offline/always-a", "--samples", "2")
    assert "0 already done" not in again  # resumed: every sample was done


def test_invalid_outputs_and_failed_calls(tmp_path: Path, fake_provider: None) -> None:
    store = tmp_path / "s.db"
    run(store, "judges", "build", "--dataset", "pico")
    run(store, "judges", "run", "--judge", "fake/chatty", "--dataset", "pico", "--limit", "5")
    data = json.loads(
        run(store, "judges", "report", "--judge", "fake/chatty", "--json", str(tmp_path / "r.json"))
        and (tmp_path / "r.json").read_text()
    )
    assert data["judges"]["fake/chatty · pairwise"]["pooled"]["invalid_share"]["value"] == 1.0
    with Store(store) as s:
        assert {v.reason for v in s.iter(JudgeVerdict)} == {"no reasoning in <think>…</think>"}
    text = run(store, "judges", "run", "--judge", "fake/dead", "--limit", "1", code=1)
    assert "of 2 samples failed" in text


def test_certify_stores_a_card_that_scores_and_leaderboard_show(
    tmp_path: Path, shared_data: Path, fake_provider: None
) -> None:
    store = answered_store(tmp_path, shared_data)
    run(store, "grade", "--judge", "fake/grader")
    assert "grader fake/grader is unvalidated" in run(store, "scores", "--judge", "fake/grader")
    text = run(
        store,
        "judges",
        "certify",
        "--grader",
        "fake/grader",
        "--data",
        str(shared_data),
        "--pairs",
        "40",
        "--samples",
        "1",
        "--cases",
        "3",
    )
    assert "grader fake/grader validity card" in text
    with Store(store) as s:
        (card,) = list(s.iter(ValidityCard))
    assert card.grader == "fake/grader"
    assert card.settings["mode"] == "per-criterion"
    pairs = card.metrics["pairs"]
    assert set(pairs["datasets"]) == {"pubmedqa", "medcalc", "medqa", "pico"}  # PICO: the bundled set
    assert pairs["figures"]["position-consistent"]["value"] == 0.0  # it always answers [[B]]
    assert pairs["figures"]["correctness"]["verdict"] == "failed"
    assert pairs["length_probe"] is not None
    assert card.metrics["rubric"]["compliance"]["value"] == 1.0
    assert card.verdict == "failed"
    assert "validity card" in text
    assert "FAILED" in text
    assert "validity card" in run(store, "scores", "--judge", "fake/grader")
    assert "validity card" in run(
        store, "leaderboard", "--judge", "fake/grader", "--out", str(tmp_path / "tables")
    )
    html = tmp_path / "report.html"
    run(store, "report", "--judge", "fake/grader", "--out", str(html))
    assert "grader fake/grader validity card" in html.read_text()
    with Store(store) as s:  # the battery's verdicts are stored apart (a rerun pays nothing), its pairs not
        assert s.count().get("judge_pair", 0) == 0
        assert s.count()["judge_verdict"] > 0
    report = refused(store, "judges", "report", "--json", str(tmp_path / "r.json"))
    assert "no judge verdicts stored" in report  # the battery (its length probes too) is on the card only


def test_validate_and_compare_two_graders(tmp_path: Path, shared_data: Path, fake_provider: None) -> None:
    store = answered_store(tmp_path, shared_data)
    text = run(store, "judges", "validate", "--grader", "fake/yes", "--json", str(tmp_path / "v.json"))
    assert "Rubric-grader validation" in text
    result = json.loads((tmp_path / "v.json").read_text())
    assert result["mutations"]["negate"]["order_accuracy"] == 0.0  # meeting everything orders nothing
    out = tmp_path / "c.json"
    text = run(
        store, "judges", "compare", "--judge", "fake/grader", "--judge", "fake/yes", "--json", str(out)
    )
    assert "Score shift B − A" in text
    data = json.loads(out.read_text())
    assert data["answers"] == 6
    by_model = {m["model"]: m for m in data["models"]}
    assert by_model["offline/empty"]["shift"] > 0  # fake/yes meets criteria on empty answers too
    assert data["criteria"]["n"] > 0
    assert 0.0 <= data["criteria"]["macro_f1"] <= 1.0


def test_an_offline_grader_card_has_the_rubric_part_and_human_agreement(
    tmp_path: Path, shared_data: Path
) -> None:
    store = answered_store(tmp_path, shared_data)
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"response": "Take colchicine at a low dose.", "criterion": "Advises colchicine", "label": True},
        {"response": "Rest.", "criterion": "Advises colchicine", "label": False},
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(store, "judges", "agreement", "--labels", str(labels), "--grader", "offline/lexical")
    text = run(
        store,
        "judges",
        "certify",
        "--grader",
        "offline/lexical",
        "--data",
        str(tmp_path / "none"),
        "--samples",
        "1",
    )
    assert "not in the battery" not in text  # an offline rubric grader judges no pairs
    assert "human macro-F1 1.00" in text
    with Store(store) as s:
        (card,) = list(s.iter(ValidityCard))
    assert card.metrics["pairs"] is None  # an offline rubric grader judges no pairs
    assert card.metrics["human_agreement"]["macro_f1"] == 1.0
    assert {"all axes", "axis accuracy"} <= set(card.metrics["rubric"]["figures"])
    verdict = card.metrics["rubric"]["figures"]["all axes"]["verdict"]
    assert verdict != "passed"  # words alone do not pass (here too few facts to say more)
    assert card.endpoint == "offline"


def test_a_grader_template_gets_its_own_card_naming_the_template(
    tmp_path: Path, shared_data: Path, fake_provider: None
) -> None:
    store = answered_store(tmp_path, shared_data)
    template = tmp_path / "grader.txt"
    template.write_text(
        "Conversation:\n{conversation}\n\nResponse:\n{response}\n\n"
        "Criterion ({points} points):\n{criterion}\n"
        'Reply with JSON {"criteria_met": true|false, "explanation": "..."}.\n'
    )
    run(store, "grade", "--judge", "fake/grader", "--grader-template", str(template))
    with Store(store) as s:
        [judge] = {g.judge for g in s.iter(Grade)}
    assert judge.startswith("fake/grader@tpl-")
    hint = run(store, "scores", "--judge", judge)
    assert f"grader {judge} is unvalidated" in hint
    assert "--grader-template FILE" in hint
    certify = ["judges", "certify", "--grader", "fake/grader", "--data", str(tmp_path / "none")]
    text = run(store, *certify, "--samples", "1", "--cases", "2", "--grader-template", str(template))
    assert f"grader {judge} validity card" in text
    assert "grader template grader.txt sha256:" in text
    with Store(store) as s:
        (card,) = list(s.iter(ValidityCard))
    assert card.grader == judge
    assert card.settings["grader_template"].startswith("grader.txt sha256:")
    assert card.metrics["rubric"] is not None  # the rubric battery graded with the template
    assert f"grader {judge} validity card" in run(store, "scores", "--judge", judge)


def test_certify_with_nothing_to_measure_writes_no_card_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVEMED_SHARED_DATA", raising=False)
    store = tmp_path / "s.db"
    nowhere = str(tmp_path / "none")
    text = refused(store, "judges", "certify", "--grader", "offline/always-a", "--pairs", "2")
    assert "nothing to measure for offline/always-a, no card written" in text
    assert "no --data DIR" in text
    text = refused(store, "judges", "certify", "--grader", "offline/lexical", "--data", nowhere)
    assert "no case with a rubric in the store (run `livemed rubrics --writer offline/rules` for the" in text
    with Store(store) as s:
        assert list(s.iter(ValidityCard)) == []


def test_certify_failed_calls_name_the_most_common_cause(
    tmp_path: Path, shared_data: Path, fake_provider: None
) -> None:
    store = answered_store(tmp_path, shared_data)
    certify = ["judges", "certify", "--grader", "fake/dead", "--data", str(shared_data), "--pairs", "1"]
    text = run(store, *certify, "--samples", "1", "--cases", "1", code=1)
    assert re.search(
        r"(\d+) of \1 battery items failed: (call failed: )?400 bad request.*; run again to retry them$", text
    )
    with Store(store) as s:
        assert list(s.iter(ValidityCard)) == []


def test_compare_says_a_pair_judge_is_not_a_rubric_grader(tmp_path: Path, shared_data: Path) -> None:
    store = answered_store(tmp_path, shared_data)
    text = refused(store, "judges", "compare", "--judge", "offline/lexical", "--judge", "offline/always-a")
    assert "offline/always-a: offline/always-a and offline/lexical-overlap are pair judges" in text
    assert "not rubric graders" in text


def test_run_with_an_unknown_dataset_lists_the_known_ones(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run(store, "judges", "build", "--dataset", "pico")
    text = refused(store, "judges", "run", "--judge", "offline/always-a", "--dataset", "nosuchset")
    assert "unknown dataset 'nosuchset'" in text
    assert "medqa" in text
    assert "pubmedqa" in text


def test_report_position_table_names_its_mean_columns(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run(store, "judges", "build", "--dataset", "pico")
    run(store, "judges", "run", "--judge", "offline/always-a", "--limit", "3")
    text = run(store, "judges", "report")
    assert "mean over datasets" in text
    assert "flip rate" in text


def test_train_help_names_the_train_extra() -> None:
    result = CliRunner().invoke(app, ["judges", "train", "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    assert "pip install 'livemed[train]'" in result.output
    regimes = CliRunner().invoke(app, ["judges", "regimes", "--help"], env={"COLUMNS": "250"})
    assert "hf/ checkpoint needs 'livemed[train]'" in regimes.output


def test_the_unvalidated_hint_runs_as_printed(tmp_path: Path, shared_data: Path) -> None:
    """`scores` says how to certify an unvalidated grader; that command, as printed, writes its card."""
    import os
    import shlex
    import subprocess
    import sys

    store = answered_store(tmp_path, shared_data)
    run(store, "grade", "--judge", "offline/lexical")
    text = run(store, "scores", "--judge", "offline/lexical")
    (hint,) = re.findall(r"run `(livemed [^`]+)`", text)
    env = {k: v for k, v in os.environ.items() if k != "LIVEMED_SHARED_DATA"} | {"LIVEMED_STORE": str(store)}
    program = [sys.executable, "-c", "from livemed.cli import main; main()"]
    done = subprocess.run(
        [*program, *shlex.split(hint)[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "grader offline/lexical validity card" in " ".join(done.stdout.split())
    assert "offline/lexical validity card" in run(store, "scores", "--judge", "offline/lexical")


def test_certify_without_data_writes_the_rubric_part_and_says_the_pairs_are_missing(
    tmp_path: Path, shared_data: Path, fake_provider: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIVEMED_SHARED_DATA", raising=False)
    store = answered_store(tmp_path, shared_data)
    text = run(store, "judges", "certify", "--grader", "fake/grader", "--samples", "1", "--cases", "2")
    assert "not in the battery: pairs: no --data DIR" in text
    with Store(store) as s:
        (card,) = list(s.iter(ValidityCard))
    assert card.metrics["rubric"] is not None
    assert card.metrics["pairs"] is None


def test_the_card_shown_is_the_one_of_the_grades_mode_and_leaderboard_files_carry_its_verdict(
    tmp_path: Path, shared_data: Path, fake_provider: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import csv

    monkeypatch.delenv("LIVEMED_SHARED_DATA", raising=False)
    store = answered_store(tmp_path, shared_data)
    run(store, "grade", "--judge", "fake/grader")  # per-criterion grades
    certify = ["judges", "certify", "--grader", "fake/grader", "--samples", "1", "--cases", "3"]
    run(store, *certify, "--mode", "batched")
    text = run(store, "scores", "--judge", "fake/grader")
    assert "grader fake/grader is unvalidated (no validity card in mode per-criterion)" in text
    out = tmp_path / "tables"
    run(store, "leaderboard", "--judge", "fake/grader", "--out", str(out))
    board = json.loads((out / "leaderboard.json").read_text())
    assert {row["validity"] for row in board["rows"]} == {"unvalidated"}
    run(store, *certify)  # per-criterion: now the grades' mode has a card
    with Store(store) as s:
        (card,) = [c for c in s.iter(ValidityCard) if c.settings["mode"] == "per-criterion"]
    text = run(store, "scores", "--judge", "fake/grader")
    assert f"({card.provenance.created_at.date().isoformat()}, per-criterion, {card.key})" in text
    run(store, "leaderboard", "--judge", "fake/grader", "--out", str(out))
    board = json.loads((out / "leaderboard.json").read_text())
    assert {row["validity"] for row in board["rows"]} == {card.verdict}
    assert board["summary"]["validity_card"] == card.id
    with (out / "leaderboard.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["validity"], r["validity_card"]) for r in rows} == {(card.verdict, card.id)}
    assert card.verdict in ("failed", "not enough data")  # fake/grader matches words, it cannot pass
