"""`livemed scores --corrected`: raw and corrected side by side, the labels used, too-few lines, the
JSON block, and the one-line refusal without an audit sample."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from livemed.cli import app
from livemed.errors import ConfigError, UserError
from livemed.review.sample import draw_sample
from livemed.score.corrected import corrected_scores
from livemed.store import Store
from tests.score.test_corrected import JUDGE, _tiny


def _project(tmp_path: Path, *, sample: bool) -> Path:
    with Store(tmp_path / "s.db") as store:
        _tiny(store)
        if sample:
            store.put([draw_sample(store, JUDGE, 10, seed=4)])
    (tmp_path / "livemed.toml").write_text('store = "s.db"\n[analysis]\nresamples = 1000\n', encoding="utf-8")
    return tmp_path


def _scores(project: Path, *args: str) -> Result:
    return CliRunner().invoke(
        app,
        ["--config", str(project / "livemed.toml"), "scores", "--judge", JUDGE, "--corrected", *args],
        env={"COLUMNS": "160"},
    )


def test_without_an_audit_sample_it_refuses_in_one_line_naming_the_command(tmp_path: Path) -> None:
    refused = _scores(_project(tmp_path, sample=False))
    assert isinstance(refused.exception, UserError)  # one line, exit code 2
    message = str(refused.exception)
    assert "\n" not in message
    assert "no audit sample for grader 'offline/lexical'" in message
    assert "`livemed review sample --judge offline/lexical --size 300`" in message
    assert "scores by" not in refused.output  # refused before scoring


def test_corrected_scores_print_beside_raw_with_labels_and_a_too_few_line(tmp_path: Path) -> None:
    project = _project(tmp_path, sample=True)
    done = _scores(project, "--json", str(tmp_path / "out.json"))
    output = done.output
    assert done.exit_code == 0, output
    with Store(tmp_path / "s.db") as store:
        expected = corrected_scores(store, JUDGE)
    assert "corrected by reviewers' labels (10 of 10 sampled verdicts labelled" in output
    lines = output.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if "corrected by reviewers' labels" in line) :]
    assert [c.strip() for c in next(x for x in lines if x.startswith("┃")).split("┃")[1:-1]] == [
        "model", "raw", "corrected", "95% CI", "labels-only", "its 95% CI", "labels",
    ]  # fmt: skip
    for row in expected.scores:
        shown = next(line for line in lines if line.startswith(f"│ {row.model} "))
        cells = [cell.strip() for cell in shown.split("│")[1:-1]]
        assert cells[1] == f"{row.raw:.3f}"
        assert cells[2] == ("—" if row.corrected is None else f"{row.corrected:.3f}")
        assert cells[-1] == str(row.labels)
        assert f"too few labels for a useful interval, {row.model}: {row.too_few}" in output
    assert "m/b: 1 answer(s) with a negative raw score" in output
    block = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["corrected"]
    assert block["labelled"] == 10
    assert [r["model"] for r in block["scores"]] == ["m/a", "m/b"]
    assert {r["axis"] for r in block["by_axis"]} == {"accuracy", "safety"}
    assert block["scores"][0]["raw"] == expected.scores[0].raw


def test_without_the_flag_there_is_no_corrected_block(tmp_path: Path) -> None:
    project = _project(tmp_path, sample=False)
    out = tmp_path / "o.json"
    result = CliRunner().invoke(
        app, ["--config", str(project / "livemed.toml"), "scores", "--judge", JUDGE, "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "corrected by" not in result.output
    assert json.loads(out.read_text(encoding="utf-8"))["corrected"] is None


def test_on_reviewed_rubrics_it_refuses_the_correction(tmp_path: Path) -> None:
    refused = _scores(_project(tmp_path, sample=True), "--rubric-version", "latest-approved")
    assert isinstance(refused.exception, ConfigError)
    assert "leave out --rubric-version" in str(refused.exception)


def test_by_axis_it_also_prints_the_corrected_score_per_axis(tmp_path: Path) -> None:
    done = _scores(_project(tmp_path, sample=True), "--by", "axis")
    assert done.exit_code == 0, done.output
    with Store(tmp_path / "s.db") as store:
        expected = corrected_scores(store, JUDGE).by_axis
    lines = done.output.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("corrected by axis")) :]
    shown = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert [row[:3] for row in shown] == [[r.model, r.axis, f"{r.raw:.3f}"] for r in expected]
    assert [row[-1] for row in shown] == [f"{r.labels}*" if r.too_few else str(r.labels) for r in expected]
