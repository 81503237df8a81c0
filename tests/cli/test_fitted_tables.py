"""`leaderboard` and `scores` fit the terminal: long model names wrap at their separators, low-priority
columns give way from the right, and a note names what was left out and where to find it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from livemed.analysis.leaderboard import LeaderboardRow
from livemed.cli import app
from livemed.cli.analysis_views import leaderboard_table
from livemed.cli.fitted import wrap_id
from livemed.store import Store
from tests.analysis.builders import study

LONG = ("openrouter/meta-llama/llama-3.1-405b-instruct", "vllm/Qwen/Qwen2.5-72B-Instruct", "fake/weak")
HEALTHBENCH_AXES = (
    "accuracy",
    "completeness",
    "context_awareness",
    "communication_quality",
    "instruction_following",
)
NOTE = re.compile(r"not shown at (\d+) columns: (.*?) \(see (.*?); every column fits in (\d+)\)")


@pytest.fixture
def long_names(tmp_path: Path) -> Path:
    with Store(tmp_path / "s.db") as store:
        store.put(study(n_cases=12, models=LONG))
    (tmp_path / "livemed.toml").write_text('store = "s.db"\n[analysis]\nresamples = 1000\n', encoding="utf-8")
    return tmp_path


def run(project: Path, columns: int, *args: str) -> str:
    result = CliRunner().invoke(
        app, ["--config", str(project / "livemed.toml"), *args], env={"COLUMNS": str(columns)}
    )
    assert result.exit_code == 0, result.output
    return result.output


def table(output: str, first: str) -> list[str]:
    """The lines of the table whose first header is `first`: from its top border to its bottom one."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(rf"┃ {re.escape(first)} +┃", line))
    end = next(i for i in range(header, len(lines)) if lines[i].startswith("└"))
    return lines[header - 1 : end + 1]


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split("[│┃]", line)[1:-1]]


def header(lines: list[str]) -> list[str]:
    return cells(lines[1])


def names(lines: list[str]) -> list[str]:
    """The model column's cells, each name's wrapped lines joined back (numbers are on a row's first line)."""
    at = header(lines).index("model")
    out: list[str] = []
    for row in (cells(line) for line in lines if line.startswith("│")):
        if row[at + 1]:
            out.append(row[at])
        else:
            out[-1] += row[at]
    return out


def note(output: str) -> tuple[int, list[str], str, int]:
    """(terminal width, columns left out, where they are, width that shows them all) from the note."""
    found = NOTE.search(" ".join(output.split()))  # the note wraps to the terminal: read it as one line
    assert found is not None, output
    return int(found[1]), found[2].split(", "), found[3], int(found[4])


def test_wrapping_an_id_keeps_every_character_and_breaks_after_separators() -> None:
    assert wrap_id("vllm/Qwen/Qwen2.5-72B-Instruct", 12) == "vllm/Qwen/\nQwen2.5-72B-\nInstruct"
    assert wrap_id("offline/reference", 28) == "offline/reference"
    assert wrap_id("abcdefghijklmnopqrstuvwxyz", 10).splitlines() == ["abcdefghij", "klmnopqrst", "uvwxyz"]


def test_leaderboard_fits_100_columns_and_names_what_it_left_out(long_names: Path) -> None:
    output = run(long_names, 100, "leaderboard")
    lines = table(output, "#")
    assert all(len(line) <= 100 for line in lines)
    shown = header(lines)
    assert {"mean", "95% CI", "cases", "graded", "failures"} <= set(shown)
    assert sorted(names(lines)) == sorted(LONG)  # wrapped, every character kept
    assert len([line for line in lines if line.startswith("│")]) > len(LONG)  # a long name took two lines
    width, left_out, where, full = note(output)
    assert width == 100
    assert "context_awareness" in left_out  # the axes give way first
    assert not set(left_out) & set(shown)
    assert where == "leaderboard.csv/.json, written below"
    note_lines = output[output.index("not shown") :].splitlines()[:2]
    assert all(len(line) <= 100 for line in note_lines)
    wide = run(long_names, full, "leaderboard")
    assert "not shown" not in wide
    assert set(left_out) <= set(header(table(wide, "#")))


def test_the_leaderboard_at_any_width_keeps_rank_mean_interval_and_failures() -> None:
    rows = [
        LeaderboardRow(
            rank=i + 1, model=model, n_cases=10, n_answers=10, mean=0.5, ci_low=0.4, ci_high=0.6,
            per_axis=dict.fromkeys(HEALTHBENCH_AXES, 0.5), coverage=0.6, harm=0.1, grade_failures=3,
        )
        for i, model in enumerate(LONG)
    ]  # fmt: skip
    for width in (80, 100, 250):
        out = Console(width=width, record=True)
        out.print(leaderboard_table(rows, out))
        text = out.export_text()
        assert all(len(line) <= width for line in text.splitlines()), width
        shown = header(table(text, "#"))
        assert {"#", "model", "mean", "95% CI", "cases", "graded", "failures"} <= set(shown)
        assert sorted(names(table(text, "#"))) == sorted(LONG)
        if width == 250:
            assert "not shown" not in text
            assert set(HEALTHBENCH_AXES) <= set(shown)
        else:
            assert note(text)[1][-1] == "instruction_following"  # the last column goes first


def test_scores_fits_the_terminal_and_its_json_has_what_it_left_out(long_names: Path) -> None:
    out = long_names / "scores.json"
    output = run(long_names, 60, "scores", "--judge", "fake/judge", "--json", str(out))
    lines = table(output, "model")
    assert all(len(line) <= 60 for line in lines)
    assert sorted(names(lines)) == sorted(LONG)
    _, left_out, where, _ = note(output)
    assert "coverage" in left_out
    assert "coverage" not in header(lines)
    assert where == "scores --json FILE"
    assert all("coverage" in row and "harm" in row for row in json.loads(out.read_text())["models"])
    assert "not shown" not in run(long_names, 200, "scores", "--judge", "fake/judge")
