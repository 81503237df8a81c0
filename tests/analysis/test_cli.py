"""The analysis commands end to end on a small store: tables on screen, CSV/JSON on disk, the report."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import CallsFailedError, RunError, UnknownNameError, UserError
from livemed.records import ErrorLabel, Rejection, Run, Score
from livemed.store import Store
from tests.analysis.builders import CUTOFFS_TOML, study

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    with Store(tmp_path / "s.db") as store:
        store.put(study(n_cases=100))
    (tmp_path / "cutoffs.toml").write_text(CUTOFFS_TOML, encoding="utf-8")
    (tmp_path / "livemed.toml").write_text(
        'store = "s.db"\n[analysis]\ncutoffs = "cutoffs.toml"\nresamples = 1000\npermutations = 1000\n'
        "min_post_cases = 5\nmin_pre_cases = 5\n",
        encoding="utf-8",
    )
    return tmp_path


def invoke(project: Path, *args: str) -> str:
    result = runner.invoke(app, ["--config", str(project / "livemed.toml"), *args], env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.output


def test_leaderboard_with_comparison_writes_csv_and_json(project: Path) -> None:
    out = invoke(project, "leaderboard", "--compare", "fake/strong", "--compare", "fake/weak")
    assert "leaderboard" in out
    assert "fake/strong − fake/weak" in out
    rows = list(
        csv.DictReader((project / "results" / "leaderboard.csv").read_text(encoding="utf-8").splitlines())
    )
    means = [float(r["mean"]) for r in rows]
    assert means == sorted(means, reverse=True)
    assert len(rows) == 3
    assert {"mean", "ci_low", "ci_high", "per_axis.accuracy", "coverage", "harm"} <= set(rows[0])
    comparison = json.loads((project / "results" / "comparison.json").read_text())["rows"][0]
    assert comparison["n_shared"] == 100
    assert comparison["p_permutation"] < 0.05


def test_compare_needs_known_models(project: Path) -> None:
    with pytest.raises(UnknownNameError, match="fake/strnog"):
        invoke(project, "leaderboard", "--compare", "fake/strnog", "--compare", "fake/weak")
    with pytest.raises(UserError, match="exactly two"):
        invoke(project, "leaderboard", "--compare", "fake/weak")


def test_contamination_uses_the_configured_registry(project: Path) -> None:
    out = invoke(project, "contamination")
    # fake/strong's rank test says q < 0.05 but its pre − post interval includes 0: no significant drop
    assert "0/1 tested models with a significant drop" in out
    data = json.loads((project / "results" / "contamination.json").read_text())
    rows = {r["model"]: r for r in data["rows"]}
    strong = rows["fake/strong"]
    assert strong["status"] == "tested"
    assert strong["q_value"] < 0.05 < strong["pre_minus_post_high"]
    assert strong["pre_minus_post_low"] < 0
    assert (strong["significant"], strong["verdict"]) == (False, "not distinguishable")
    assert rows["fake/strong"]["n_controls"] == 2
    assert rows["fake/weak"]["control_kind"] == "after every case"  # cutoff day 300, cases up to day 297
    assert rows["openai/gpt-4o-mini"]["control_kind"] == "before every case"  # bundled cutoff, Oct 2023
    invoke(project, "contamination", "--min-post", "50")
    data = json.loads((project / "results" / "contamination.json").read_text())
    assert {r["model"]: r["status"] for r in data["rows"]}["fake/strong"] == "insufficient data"


def test_contamination_table_shows_full_model_ids_and_full_minus_post_at_100_columns(tmp_path: Path) -> None:
    long_id = "vllm/meta-llama/Llama-3.1-8B-Instruct"
    with Store(tmp_path / "s.db") as store:
        store.put(study(n_cases=100, models=(long_id, "fake/strong", "openai/gpt-4o-mini")))
    (tmp_path / "cutoffs.toml").write_text(CUTOFFS_TOML, encoding="utf-8")
    (tmp_path / "livemed.toml").write_text(
        'store = "s.db"\n[analysis]\ncutoffs = "cutoffs.toml"\nresamples = 1000\npermutations = 1000\n'
        "min_post_cases = 5\nmin_pre_cases = 5\n",
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["--config", str(tmp_path / "livemed.toml"), "contamination"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if not line.startswith("wrote ")]
    assert max(len(line) for line in lines) <= 100
    for model in (long_id, "fake/strong", "openai/gpt-4o-mini"):
        assert any(line.startswith(model + " ") for line in lines), model
    assert "not distinguishable" in result.output  # the tested model's verdict, in the second table
    assert "full−post" in result.output
    assert "…" not in result.output
    data = json.loads((tmp_path / "results" / "contamination.json").read_text())
    strong = next(r for r in data["rows"] if r["model"] == "fake/strong")
    row = next(line for line in lines if line.startswith("fake/strong "))
    assert f"{strong['full_minus_post']:.3f}" in row.split()


def test_trends(project: Path) -> None:
    invoke(project, "trends")
    text = (project / "results" / "trends.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert {r["month"] for r in rows} >= {"2024-01", "2024-10"}
    assert sum(int(r["n"]) for r in rows if r["model"] == "fake/weak") == 100


def test_taxonomy_heuristic_stores_labels_and_a_run(project: Path) -> None:
    out = invoke(project, "taxonomy", "--model", "fake/weak", "--k", "7")
    assert "offline/heuristic" in out
    with Store(project / "s.db") as store:
        labels = list(store.iter(ErrorLabel))
        runs = [r for r in store.iter(Run) if r.command == "taxonomy"]
    assert len(labels) == 7
    assert {label.method for label in labels} == {"heuristic"}
    assert runs
    assert runs[0].outcome == "ok"
    assert runs[0].models == ["offline/heuristic"]  # the classifier is named in the run's provenance
    rows = json.loads((project / "results" / "taxonomy.json").read_text())["rows"]
    assert rows[0]["n"] == 7


def test_taxonomy_without_a_model_classifies_every_scored_model(project: Path) -> None:
    invoke(project, "taxonomy", "--k", "3")
    with Store(project / "s.db") as store:
        labelled = {label.model for label in store.iter(ErrorLabel)}
        scored = {score.model for score in store.iter(Score)}
    assert len(scored) == 3
    assert labelled == scored


def test_taxonomy_with_a_scripted_llm_classifier(project: Path) -> None:
    # fake/classifier with no script answers with an error; failures are stored as rejections, not labels,
    # and the command fails with one line
    with pytest.raises(CallsFailedError, match=r"^3 of 3 answers failed: .*; run again to retry them$"):
        invoke(project, "taxonomy", "--model", "fake/strong", "--k", "3", "--classifier", "fake/classifier")
    with Store(project / "s.db") as store:
        assert [label for label in store.iter(ErrorLabel)] == []
        assert {r.reason for r in store.iter(Rejection) if r.stage == "taxonomy"} == {"classifier_failed"}
        [run] = [r for r in store.iter(Run) if r.command == "taxonomy"]
        assert run.outcome == "failed"


def test_several_judges_need_a_choice(project: Path) -> None:
    with Store(project / "s.db") as store:
        score = next(iter(store.iter(Score)))
        store.put([score.model_copy(update={"judge": "fake/other"})])
    with pytest.raises(UserError, match="--judge"):
        invoke(project, "leaderboard")
    invoke(project, "leaderboard", "--judge", "fake/judge")


def test_report_writes_html_and_tables(project: Path) -> None:
    out = invoke(project, "report", "--out", str(project / "site" / "index.html"), "--max-cases", "5")
    html = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert "<h2>Leaderboard</h2>" in html
    assert "<h2>Answer length and score</h2>" in html
    assert "Spearman rho" in html
    assert html.count('class="case"') == 5
    assert (project / "site" / "index-tables" / "contamination.csv").exists()
    assert "open it in a browser" in out


def test_taxonomy_llm_classifier_labels_once_and_records_usage(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed import models
    from livemed.models.fake import FakeModel

    classifier = FakeModel(
        "fake/classifier",
        function=lambda messages, settings: '{"rationale": "ignores CKD", "category": "CNIF"}',
    )
    monkeypatch.setattr(models, "get_model", lambda model_id, config=None: classifier)
    args = ("taxonomy", "--model", "fake/weak", "--k", "4", "--classifier", "fake/classifier", "--no-cache")
    out = invoke(project, *args)
    assert "4 classified, 0 already labelled" in out
    out = invoke(project, *args)
    assert "0 classified, 4 already labelled" in out  # resumable: labelled answers are not sent again
    assert len(classifier.calls) == 4
    with Store(project / "s.db") as store:
        labels = list(store.iter(ErrorLabel))
        first, second = sorted(
            (r for r in store.iter(Run) if r.command == "taxonomy"), key=lambda r: r.started_at
        )
    assert {(label.category, label.method, label.classifier) for label in labels} == {
        ("CNIF", "llm", "fake/classifier")
    }
    assert first.usage["fake/classifier"].calls == 4
    assert "fake/classifier" not in second.usage  # nothing was sent the second time
    rows = json.loads((project / "results" / "taxonomy.json").read_text())["rows"]
    assert rows[0]["reasoning_share"] == 1.0


def test_taxonomy_on_a_legal_store_says_the_taxonomy_is_clinical_only(project: Path) -> None:
    config = ["--config", str(project / "livemed.toml")]
    args = [*config, "taxonomy", "--k", "2"]
    refused = runner.invoke(app, [*args, "--domain", "legal"]).exception
    assert isinstance(refused, UserError)  # one line on stderr, exit 2
    assert refused.exit_code == 2
    assert str(refused).startswith(
        "the error taxonomy (CNIF, GOPR, MHME, KGOC, NCE) is clinical only: the legal"
    )
    with Store(project / "s.db") as store:  # the store was graded under the legal pack
        store.put([Run(run_id="r-legal", command="grade", settings={"domain": "legal"})])
    again = runner.invoke(app, args).exception
    assert isinstance(again, UserError)
    assert "the legal pack defines none" in str(again)
    with Store(project / "s.db") as store:
        assert not list(store.iter(ErrorLabel))  # nothing was labelled


def test_contamination_warns_when_cases_are_dated_by_file_mtime(project: Path) -> None:
    from livemed.records import Case

    assert "modification time" not in invoke(project, "contamination")
    with Store(project / "s.db") as store:
        cases = list(store.iter(Case))
        store.put([c.model_copy(update={"date_field": "file_mtime"}) for c in cases[:3]])
    out = invoke(project, "contamination")
    assert "warning: 3 case(s) are dated by their input file's modification time" in " ".join(out.split())


def test_tables_name_convention_judge_and_failure_policy(project: Path) -> None:
    invoke(project, "leaderboard")
    rows = list(csv.DictReader((project / "results" / "leaderboard.csv").read_text().splitlines()))
    assert {(r["convention"], r["judge"], r["failure_policy"]) for r in rows} == {
        ("livemed", "fake/judge", "strict")
    }
    invoke(project, "report", "--out", str(project / "site" / "r.html"), "--max-cases", "1")
    folder = project / "site" / "r-tables"
    for path in sorted(folder.glob("*.json")):
        summary = json.loads(path.read_text())["summary"]
        assert (summary["convention"], summary["judge"], summary["failure_policy"]) == (
            "livemed", "fake/judge", "strict"
        ), path.name  # fmt: skip
    assert "n_tested" in json.loads((folder / "contamination.json").read_text())["summary"]


def test_analysis_never_mixes_failure_policies(project: Path) -> None:
    with Store(project / "s.db") as store:
        strong = [s for s in store.iter(Score) if s.model == "fake/strong"]
        store.put([s.model_copy(update={"failure_policy": "exclude", "score": 0.0}) for s in strong[:10]])
    invoke(project, "leaderboard")
    rows = {
        r["model"]: r
        for r in csv.DictReader((project / "results" / "leaderboard.csv").read_text().splitlines())
    }
    assert int(rows["fake/strong"]["n_cases"]) == 100  # exclude-policy scores sit beside, never mixed in
    # under `exclude` only 10 of fake/strong's answers (and none of the others') have scores: not ranked
    with pytest.raises(RunError, match=r"not ranked, grading incomplete: fake/strong \(10 of 100 answers"):
        invoke(project, "leaderboard", "--policy", "exclude")
    invoke(project, "leaderboard", "--policy", "exclude", "--allow-incomplete")
    rows = {
        r["model"]: r
        for r in csv.DictReader((project / "results" / "leaderboard.csv").read_text().splitlines())
    }
    assert list(rows) == ["fake/strong"]
    assert (rows["fake/strong"]["n_cases"], float(rows["fake/strong"]["mean"])) == ("10", 0.0)
    assert rows["fake/strong"]["failure_policy"] == "exclude"
    assert (rows["fake/strong"]["answers_graded"], rows["fake/strong"]["complete"]) == ("10", "False")


def test_unknown_convention_or_policy_and_missing_scores_are_user_errors(
    project: Path, tmp_path: Path
) -> None:
    with pytest.raises(UserError, match="use one of livemed, healthbench"):
        invoke(project, "leaderboard", "--convention", "healthbenhc")
    with pytest.raises(UserError, match="use one of strict, not-met, exclude"):
        invoke(project, "trends", "--policy", "skip")
    with pytest.raises(UserError, match="livemed scores --judge offline/lexical --convention healthbench"):
        invoke(project, "leaderboard", "--convention", "healthbench")


def test_report_into_an_existing_folder_writes_report_html(project: Path) -> None:
    folder = project / "site"
    folder.mkdir()
    invoke(project, "report", "--out", str(folder), "--max-cases", "1")
    assert "<h2>Leaderboard</h2>" in (folder / "report.html").read_text(encoding="utf-8")
    assert (folder / "report-tables" / "leaderboard.csv").exists()
    assert not (project / "site-tables").exists()
    prompts = {  # the provenance "Prompts" table, like every other table of the report
        (r["kind"], r["model"], r["prompt_hash"]): int(r["records"])
        for r in csv.DictReader((folder / "report-tables" / "prompts.csv").read_text().splitlines())
    }
    with Store(project / "s.db") as store:
        n_grades = store.count()["grade"]
    assert prompts[("grade", "fake/judge", "gradeprompt001")] == n_grades
    assert ("rubric", "fake/writer", "rubricprompt01") in prompts
    summary = json.loads((folder / "report-tables" / "prompts.json").read_text())["summary"]
    assert summary["judge"] == "fake/judge"


@pytest.mark.parametrize(
    ("command", "text"), [("leaderboard", "[analysis] out_dir"), ("report", "[analysis] report")]
)
def test_help_keeps_config_section_names(command: str, text: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "250"})
    assert text in result.output


def test_funnel_of_an_empty_store_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "livemed.toml").write_text(f'store = "{tmp_path / "empty.db"}"\n')
    Store(tmp_path / "empty.db").close()  # an empty store (no store at all: test_read_commands)
    with pytest.raises(UserError, match=r"run `livemed harvest --source demo` \(any source of"):
        invoke(tmp_path, "funnel")


def test_every_table_shows_grading_and_an_incomplete_model_is_not_ranked(project: Path) -> None:
    """An answer without a score (its grader call failed) makes its model incomplete everywhere."""
    with Store(project / "s.db") as store:
        weak = sorted(s.id for s in store.iter(Score) if s.model == "fake/weak")
        store.delete(Score.kind, weak[:1])
    for command in ("contamination", "trends"):
        out = invoke(project, command)
        assert "fake/weak" in out
        assert "99/100 ⚠" in out
        grading = list(csv.DictReader((project / "results" / "grading.csv").read_text().splitlines()))
        assert {r["model"]: (r["graded"], r["answers"]) for r in grading}["fake/weak"] == ("99", "100")
    with pytest.raises(
        RunError, match=r"not ranked, grading incomplete: fake/weak \(99 of 100 answers graded\)"
    ):
        invoke(project, "leaderboard")
    ranked = list(csv.DictReader((project / "results" / "leaderboard.csv").read_text().splitlines()))
    assert "fake/weak" not in {r["model"] for r in ranked}
    invoke(project, "leaderboard", "--allow-incomplete")
    ranked = list(csv.DictReader((project / "results" / "leaderboard.csv").read_text().splitlines()))
    assert {r["model"]: r["complete"] for r in ranked}["fake/weak"] == "False"
    report = project / "r.html"
    with pytest.raises(RunError, match="not ranked"):
        invoke(project, "report", "--out", str(report), "--max-cases", "2")
    html = report.read_text(encoding="utf-8")
    assert 'id="not-ranked"' in html
    assert "99 of 100 answers graded" in html
    invoke(project, "report", "--out", str(report), "--max-cases", "2", "--allow-incomplete")
    assert "99/100 (incomplete)" in report.read_text(encoding="utf-8")
