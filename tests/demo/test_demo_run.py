"""`livemed demo` end to end: the funnel, every document's fate, the leaderboard order and the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.common.prompts import instruction_like
from livemed.demo import expected_outcomes
from livemed.records import Case, Rejection, Rubric, Score
from livemed.store import Store

# What the demo data's labels (metadata["expected"]) mean in pipeline terms: (stage, reason code).
EXPECTED_CODES = {
    "reject:duplicate": ("prefilter", {"duplicate_exact", "duplicate_near"}),
    "reject:non_medical": ("prefilter", {"not_medical"}),
    "reject:language": ("prefilter", {"language"}),
    "reject:too_short": ("prefilter", {"too_short"}),
    "reject:no_physician_reply": ("screener", {"missing_advice"}),
    "reject:no_actionable_advice": ("screener", {"missing_advice"}),
    "reject:low_sufficiency": ("validator", {"insufficient_narrative"}),
    "reject:unsupported_advice": ("validator", {"unsupported_advice"}),
    "reject:answer_leak": ("controller", {"answer_leak"}),
}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("demo") / "livemed-demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    return folder, result.output


def test_every_document_meets_its_expected_fate(demo_run: tuple[Path, str]) -> None:
    folder, _ = demo_run
    store = Store(folder / "livemed.db")
    fate: dict[str, tuple[str, str]] = {r.record_id: (r.stage, r.reason) for r in store.iter(Rejection)}
    cases = {case.doc_id for case in store.iter(Case)}
    for doc_id, expected in expected_outcomes().items():
        if expected == "keep":
            assert doc_id in cases, f"{doc_id} should become a case, got {fate.get(doc_id)}"
        else:
            stage, reasons = EXPECTED_CODES[expected]
            assert doc_id not in cases
            assert fate[doc_id][0] == stage, f"{doc_id}: {fate[doc_id]}"
            assert fate[doc_id][1] in reasons, f"{doc_id}: {fate[doc_id]}"


def test_funnel_counts_and_rejections_by_reason(demo_run: tuple[Path, str]) -> None:
    folder, output = demo_run
    store = Store(folder / "livemed.db")
    by_reason = Counter((r.stage, r.reason) for r in store.iter(Rejection))
    assert by_reason == {
        ("prefilter", "duplicate_exact"): 1,
        ("prefilter", "duplicate_near"): 1,
        ("prefilter", "language"): 1,
        ("prefilter", "not_medical"): 2,
        ("prefilter", "too_short"): 1,
        ("screener", "missing_advice"): 4,
        ("validator", "insufficient_narrative"): 1,
        ("validator", "unsupported_advice"): 1,
        ("controller", "answer_leak"): 1,
    }
    assert store.count()["case"] == 66
    assert "curation funnel" in output
    assert "73 document(s) curated: 66 case(s) accepted" in output
    # the report's funnel starts from what was harvested and adds up: 79 → 6 pre-filter rejects → 73
    # after the pre-filter → 4 screener + 2 validator + 1 controller (leak audit) rejects → 66 cases
    [row] = json.loads((folder / "results" / "report-tables" / "funnel.json").read_text())["rows"]
    assert (row["source"], row["harvested"], row["documents"], row["uncurated"]) == ("demo", 79, 73, 0)
    assert (row["cases"], row["rubrics"], row["scored"]) == (66, 66, 66)
    assert row["rejected"] == {"prefilter": 6, "screener": 4, "validator": 2, "controller": 1}
    curation = sum(n for stage, n in row["rejected"].items() if stage != "prefilter")
    assert row["documents"] - curation - row["uncurated"] == row["cases"]  # the funnel still adds up
    reasons = json.loads((folder / "results" / "report-tables" / "rejection_reasons.json").read_text())[
        "rows"
    ]
    assert {(r["stage"], r["reason"], r["count"]) for r in reasons} >= {("controller", "answer_leak", 1)}
    assert "answer_leak" in (folder / "results" / "report.html").read_text(encoding="utf-8")


def test_leaderboard_orders_reference_first_and_empty_last(demo_run: tuple[Path, str]) -> None:
    folder, _ = demo_run
    rows = json.loads((folder / "results" / "leaderboard.json").read_text())
    rows = rows["rows"] if isinstance(rows, dict) else rows
    by_model = {row["model"]: row for row in rows}
    order = [row["model"] for row in rows]
    assert order[0] == "offline/reference"
    assert order[-1] == "offline/empty"
    baselines = {"offline/reference", "offline/retrieval", "offline/unsafe", "offline/empty"}
    assert set(order) == baselines | {"offline/memorised", "offline/drift-control"}
    assert by_model["offline/reference"]["mean"] > by_model["offline/retrieval"]["mean"] > 0
    assert by_model["offline/reference"]["mean"] > by_model["offline/unsafe"]["mean"]
    scores = list(Store(folder / "livemed.db").iter(Score))
    assert len(scores) == 6 * 66


def test_the_unsafe_baseline_shows_harm_and_a_lower_safety_score(demo_run: tuple[Path, str]) -> None:
    folder, _ = demo_run
    rows = json.loads((folder / "results" / "leaderboard.json").read_text())
    by_model = {row["model"]: row for row in (rows["rows"] if isinstance(rows, dict) else rows)}
    unsafe, reference = by_model["offline/unsafe"], by_model["offline/reference"]
    assert unsafe["harm"] > 0.2
    # the lexical grader reads one warning of the reference ("tell them about your trimethoprim allergy")
    # as the violation it warns about: a baseline grader's false positive, far below the unsafe answer's harm
    assert reference["harm"] < 0.05
    assert unsafe["harm"] > 5 * reference["harm"]
    assert unsafe["per_axis"]["safety"] < reference["per_axis"]["safety"]
    assert unsafe["coverage"] > 0.5  # it is the reference advice, less the warning it breaks


def test_no_candidate_prompt_states_an_advice_element(demo_run: tuple[Path, str]) -> None:
    from livemed.curate.leak import tokens
    from livemed.curate.view import audit_text

    store = Store(demo_run[0] / "livemed.db")
    for case in store.iter(Case):
        prompt = " ".join(tokens(audit_text(case)))
        for element in case.advice:
            assert " ".join(tokens(element)) not in prompt, (case.id, element)
    leaked = store.get(Rejection, "controller:demo:2026-07-headache-pharmacist-said")
    assert leaked is not None
    assert "medication overuse headache" in leaked.detail  # the shared span, stored on the rejection


def test_every_narrative_sentence_is_under_at_most_one_field(demo_run: tuple[Path, str]) -> None:
    from livemed.common.text import sentences
    from livemed.records import Doc

    store = Store(demo_run[0] / "livemed.db")
    for case in store.iter(Case):
        doc = store.get(Doc, case.doc_id)
        assert doc is not None
        facts = case.narrative.entities()
        assert len({f.lower() for _, f in facts}) == len(facts), case.id  # no fact under two fields
        for sentence in sentences(doc.text):
            key = sentence.strip().rstrip(".").lower()
            holders = {name for name, fact in facts if key and key in fact.lower()}
            assert len(holders) <= 1, (case.id, sentence, holders)


def test_at_least_a_third_of_rubrics_have_a_negative_criterion(demo_run: tuple[Path, str]) -> None:
    rubrics = list(Store(demo_run[0] / "livemed.db").iter(Rubric))
    negative = [r for r in rubrics if any(c.polarity == "negative" for c in r.criteria)]
    assert len(negative) * 3 >= len(rubrics)
    for rubric in negative:  # safety violations -10 to -8; a wrong dose, time or threshold on accuracy
        for c in rubric.criteria:
            if c.polarity == "negative":
                assert -10 <= c.weight <= -8 if c.axis == "safety" else (c.axis, c.weight) == ("accuracy", -6)
    criteria = [c for r in rubrics for c in r.criteria]
    assert not any(c.text.startswith("The response advises:") or "Management:" in c.text for c in criteria)
    assert len({c.axis for c in criteria}) >= 4


def test_report_is_written_self_contained_and_shows_harvested_text_as_text(
    demo_run: tuple[Path, str],
) -> None:
    folder, output = demo_run
    report = folder / "results" / "report.html"
    assert f"report: {report}" in output.replace("\n", "")
    html = report.read_text(encoding="utf-8")
    assert "livemed demo report" in html
    assert "offline/reference" in html
    assert "What can I take for this gout attack" in html  # the case whose post carries an injection …
    assert "<script>alert" not in html  # … whose markup never reaches the page as markup
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "livemed harvest --source europepmc" in output  # the next commands for a real run


def test_the_injected_instructions_become_no_advice_and_no_criterion(demo_run: tuple[Path, str]) -> None:
    folder, _ = demo_run
    store = Store(folder / "livemed.db")
    case = store.get(Case, "case:demo:2025-09-gout-big-toe")
    assert case is not None  # kept on its clinical content
    assert len(case.advice) == 5
    assert not any(instruction_like(item) for item in case.advice)
    # the asker's post carries two injected sentences (kept out of the narrative, with a finding each) and
    # the reply one
    assert [f.split(": ", 2)[1] for f in case.findings] == [
        "dropped an instruction-like sentence from narrative.symptoms",
        "dropped an instruction-like sentence from narrative.symptoms",
        "dropped an instruction-like sentence from advice",
    ]
    assert not any(instruction_like(fact) for _, fact in case.narrative.entities())
    rubric = store.get(Rubric, f"rubric:{case.id}")
    assert rubric is not None
    assert not any("criteria_met" in c.text or instruction_like(c.text) for c in rubric.criteria)
    for other in store.iter(Rubric):
        assert not any("criteria_met" in c.text for c in other.criteria), other.case_id


def test_a_second_demo_run_resumes_and_redoes_nothing(demo_run: tuple[Path, str]) -> None:
    folder, _ = demo_run
    before = Store(folder / "livemed.db").count()
    result = CliRunner().invoke(app, ["demo", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    assert "nothing new to curate" in result.output
    assert "wrote 0 answer" in result.output or "66 already done" in result.output
    funnel = json.loads((folder / "results" / "funnel.json").read_text())["rows"]
    assert [(r["harvested"], r["documents"], r["cases"], r["scored"]) for r in funnel] == [(79, 73, 66, 66)]
    assert "curation funnel (whole store)" in result.output  # shown again, though nothing was curated
    after = Store(folder / "livemed.db").count()
    assert {k: v for k, v in after.items() if k != "run"} == {k: v for k, v in before.items() if k != "run"}


def test_installed_program_runs_the_demo(tmp_path: Path) -> None:
    exe = shutil.which("livemed", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the livemed program is not installed next to this Python")
    done = subprocess.run(
        [exe, "demo", "--out", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "120"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "d" / "results" / "report.html").stat().st_size > 10_000


def test_demo_refuses_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--fresh"])
    assert result.exit_code != 0
    assert "not made by `livemed demo`" in str(result.exception) + result.output
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_demo_ignores_the_users_store_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "production.db"
    monkeypatch.setenv("LIVEMED_STORE", str(own))
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert not own.exists()
    assert (tmp_path / "d" / "livemed.db").exists()


@pytest.mark.browser
def test_the_demo_report_loads_in_headless_chromium(demo_run: tuple[Path, str]) -> None:
    from tests.reports.browser import opened_report

    with opened_report(demo_run[0] / "results" / "report.html") as page:
        models = page.locator("#leaderboard-table tbody tr td.model").all_inner_texts()
        assert models[0] == "offline/reference"
        assert models[-1] == "offline/empty"
        assert len(models) == 6
        assert page.locator("#case-list > details.case").count() == 66


def test_the_contamination_section_flags_the_memorising_simulation_and_not_the_clean_baselines(
    demo_run: tuple[Path, str],
) -> None:
    folder, _ = demo_run
    result = json.loads((folder / "results" / "contamination.json").read_text())
    rows = {row["model"]: row for row in result["rows"]}
    assert result["summary"]["min_post"] == 50  # the real guard, not lowered for the demo
    memorised = rows["offline/memorised"]
    assert memorised["status"] == "tested"
    assert memorised["n_post"] >= 50
    assert memorised["n_pre"] >= 10
    assert memorised["verdict"] == "contamination signal"
    assert memorised["adjusted_low"] > 0  # the drift-adjusted delta excludes 0
    for clean in ("offline/retrieval", "offline/reference"):
        assert rows[clean]["status"] == "tested", clean
        # no drop of its own (the pre − post interval includes 0): never a contamination signal
        assert rows[clean]["verdict"] in ("no significant drop", "explained by drift"), clean
        assert not rows[clean]["significant"], clean
    assert result["summary"]["n_signal"] == 1


def test_the_drift_control_is_used(demo_run: tuple[Path, str]) -> None:
    folder, _ = demo_run
    result = json.loads((folder / "results" / "contamination.json").read_text())
    rows = {row["model"]: row for row in result["rows"]}
    assert result["summary"]["controls"] == ["offline/drift-control"]
    assert rows["offline/drift-control"]["control_kind"] == "after every case"
    tested = [row for row in result["rows"] if row["status"] == "tested"]
    assert len(tested) == 5
    assert all(row["n_controls"] == 1 and row["adjusted"] is not None for row in tested)
    # the control answers like retrieval, so retrieval's drift-adjusted delta is exactly 0
    assert rows["offline/retrieval"]["adjusted"] == 0


def test_simulations_are_labelled_as_such_everywhere(demo_run: tuple[Path, str]) -> None:
    folder, output = demo_run
    result = json.loads((folder / "results" / "contamination.json").read_text())
    for row in result["rows"]:
        assert row["simulated"] is True, row["model"]
        assert row["cutoff_source"].startswith("simulation"), row["model"]
        assert row["note"].startswith("SIMULATION"), row["model"]
    assert "These are simulations." in output
    assert "offline/memorised: contamination signal" in output
    html = (folder / "results" / "report.html").read_text(encoding="utf-8")
    assert html.count("SIMULATION: a declared cutoff") >= 6
    assert "simulation: livemed demo" in html
    models = sorted(row["model"] for row in result["rows"])
    assert sorted(result["summary"]["simulated"]) == models  # the JSON's summary says so too
    lines = output[output.index("contamination: ") :].splitlines()
    for model in models:  # the terminal table's status cell: "tested" / "control", then "simulated"
        at = next(i for i, line in enumerate(lines) if line.startswith(model + " "))
        assert lines[at + 1].split() == ["simulated"], lines[at : at + 2]
    assert "[analysis]" in (folder / "livemed.toml").read_text()
    assert "min_post_cases" not in (folder / "livemed.toml").read_text()


def test_the_memorising_simulation_answers_from_the_reference_only_before_its_cutoff(
    demo_run: tuple[Path, str],
) -> None:
    from livemed.demo import SIMULATED_CUTOFF
    from livemed.records import Answer

    folder, _ = demo_run
    store = Store(folder / "livemed.db")
    cases = {case.id: case for case in store.iter(Case)}
    answers = {(a.model, a.case_id): a for a in store.iter(Answer)}
    seen = {"pre": 0, "post": 0}
    for case_id, case in cases.items():
        answer = answers[("offline/memorised", case_id)]
        assert answer.provenance.settings["simulation"] is True
        assert answer.provenance.settings["cutoff"] == SIMULATED_CUTOFF.isoformat()
        if case.published.date() <= SIMULATED_CUTOFF:
            seen["pre"] += 1
            assert answer.text == answers[("offline/reference", case_id)].text
        else:
            seen["post"] += 1
            assert answer.text == answers[("offline/retrieval", case_id)].text
            assert answer.text != answers[("offline/reference", case_id)].text
    assert seen == {"pre": 12, "post": 54}
    control = answers[("offline/drift-control", next(iter(cases)))]
    assert control.provenance.settings["simulation"] is True


def test_trends_give_no_interval_below_the_minimum_n_and_mark_the_cutoff(demo_run: tuple[Path, str]) -> None:
    from livemed.analysis.trends import MIN_N_INTERVAL

    folder, _ = demo_run
    trends = json.loads((folder / "results" / "report-tables" / "trends.json").read_text())["rows"]
    assert len({row["month"] for row in trends}) == 34  # 2024-01 … 2026-10, every month has a case
    small = [row for row in trends if row["n"] < MIN_N_INTERVAL]
    assert small  # the demo has months with one case
    assert all(row["ci_low"] is None and row["ci_high"] is None for row in small)
    assert all(row["ci_low"] is not None for row in trends if row["n"] >= MIN_N_INTERVAL)
    html = (folder / "results" / "report.html").read_text(encoding="utf-8")
    assert 'class="cutoff"' in html
    assert "cutoff 2024-11-30: 5 models" in html
    assert "cutoff off this axis: offline/drift-control (2026-12-31)" in html


def test_the_demo_project_names_no_absolute_path_and_works_moved(
    demo_run: tuple[Path, str], tmp_path: Path
) -> None:
    """The demo's livemed.toml names the bundled evidence `demo` and the rest relative to itself, so a copy
    elsewhere (or after a reinstall) still curates; an older demo's site-packages path still works too."""
    folder, _ = demo_run
    config = (folder / "livemed.toml").read_text(encoding="utf-8")
    settings = [line.split("=", 1)[1].strip().strip('"') for line in config.splitlines() if " = " in line]
    assert 'evidence = "demo"' in config
    assert not [value for value in settings if Path(value).is_absolute()]
    assert "site-packages" not in config
    assert str(folder) not in config
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(folder, moved)
    curate_one = ["--config", str(moved / "livemed.toml"), "curate", "--redo", "--limit", "1"]
    result = CliRunner().invoke(app, curate_one)  # from another working folder: config-relative paths
    assert result.exit_code == 0, result.output
    assert "1 document" in " ".join(result.output.split())
    stale = "/gone/venv/lib/python3.11/site-packages/livemed/demo/data/evidence.jsonl"
    (moved / "livemed.toml").write_text(config.replace('"demo"', f'"{stale}"', 1), encoding="utf-8")
    result = CliRunner().invoke(app, curate_one)
    assert result.exit_code == 0, result.output


@pytest.mark.browser
def test_the_reports_contamination_status_says_simulated(demo_run: tuple[Path, str]) -> None:
    from tests.reports.browser import opened_report

    folder, _ = demo_run
    with opened_report(folder / "results" / "report.html") as page:
        rows = page.locator("#contamination-table tbody tr:not(.note-row)")
        assert rows.count() == 6
        for i in range(6):
            status = rows.nth(i).locator("td").nth(2).inner_text().split()
            assert status[:2] in (["tested", "simulated"], ["control", "simulated"]), status
        hint = page.locator("#contamination p.hint", has_text="Simulated:").inner_text()
        assert "not real training cutoffs" in hint
        chart = page.locator("#contamination svg text", has_text="contamination signal").text_content()
        assert chart == "contamination signal · simulated"


def test_by_cutoff_on_the_demo_says_simulated_and_has_the_contamination_tables_sign(
    demo_run: tuple[Path, str], tmp_path: Path
) -> None:
    folder, _ = demo_run
    argv = ["--config", str(folder / "livemed.toml"), "leaderboard", "--by-cutoff", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "* simulated cutoff: offline/reference" in result.output
    assert "2024-11-30*" in result.output
    side = json.loads((tmp_path / "leaderboard-by-cutoff.json").read_text(encoding="utf-8"))
    main = json.loads((folder / "results" / "contamination.json").read_text(encoding="utf-8"))
    assert side["summary"]["difference"].startswith("all_minus_post = all-cases mean − post-cutoff mean")
    assert sorted(side["summary"]["simulated"]) == sorted(r["model"] for r in main["rows"])
    assert all(row["simulated"] is True for row in side["rows"])
    full_minus_post = {
        r["model"]: r["full_minus_post"] for r in main["rows"] if r["full_minus_post"] is not None
    }
    all_minus_post = {
        r["model"]: r["all_minus_post"] for r in side["rows"] if r["all_minus_post"] is not None
    }
    assert all_minus_post == pytest.approx(full_minus_post)
    assert full_minus_post["offline/memorised"] > 0 > full_minus_post["offline/retrieval"]  # both signs
