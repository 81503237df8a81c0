"""Executors without Ray: the shared rate schedule, the command line a worker gets, the in-process
worker, and the one-line refusals (a SQLite store, an unknown executor). Ray itself:
tests/integration/test_ray_executor.py (marker `ray`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.cli.application import run
from livemed.cli.executors import ray as ray_executor
from livemed.cli.executors.inprocess import run_worker
from livemed.cli.executors.ratelimit import Reservations
from tests.live.test_eval import healthbench_file


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_schedule_lets_a_burst_through_then_spaces_requests() -> None:
    clock = Clock()
    schedule = Reservations(clock=clock)
    delays = [schedule.reserve("m", 600, None, 10) for _ in range(30)]  # 10 a second, bursts of 10
    assert delays[:10] == [0.0] * 10
    assert delays[10:] == pytest.approx([0.1 * k for k in range(1, 21)])
    clock.now += 10  # a quiet while: a full burst again
    assert schedule.reserve("m", 600, None, 10) == pytest.approx(0.0)
    assert schedule.reserve("other", 600, None, 10) == 0.0  # one schedule per model id


def test_tokens_per_minute_spaces_large_requests() -> None:
    schedule = Reservations(clock=Clock())
    # 6,000 tokens a minute = 100 a second; bursts of 100 tokens; each request books 50
    delays = [schedule.reserve("m", None, 6000, 50) for _ in range(4)]
    assert delays == pytest.approx([0.0, 0.0, 0.5, 1.0])
    assert schedule.reserve("m", None, 6000, 10_000) == pytest.approx(2.0)  # capped at one burst


def project(tmp_path: Path, executor: str = "inprocess") -> Path:
    config = tmp_path / "livemed.toml"
    config.write_text(f'store = "livemed.db"\n[executor]\nkind = "{executor}"\n', encoding="utf-8")
    return config


def test_a_worker_gets_the_same_command_line_and_runs_it_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project(tmp_path, "ray")
    runner = CliRunner(env={"COLUMNS": "200"})
    data = healthbench_file(tmp_path / "hb.jsonl", 3)
    imported = runner.invoke(app, ["--config", str(config), "import-healthbench", str(data)])
    assert imported.exit_code == 0, imported.output
    lines: list[list[str]] = []
    monkeypatch.setattr(ray_executor, "fan_out", lambda program, argv, settings, store: lines.append(argv))
    monkeypatch.chdir(tmp_path)
    args = ["answer", "--model", "offline/reference", "--samples", "2", "--no-cache", "--temperature", "0.5"]
    result = runner.invoke(app, ["--config", "livemed.toml", *args])
    assert result.exit_code == 0, result.output
    [argv] = lines
    assert argv == [
        "--config",
        str(config.resolve()),
        "answer",
        "--model",
        "offline/reference",
        "--samples",
        "2",
        "--temperature",
        "0.5",
        "--no-cache",
        "--executor",
        "inprocess",
    ]
    done = run_worker(run, argv, str(tmp_path))
    assert done.exit_code == 0, done.stderr
    assert "answers by offline/reference: 6 seen, 0 already done, wrote 6 answers" in " ".join(
        done.stdout.split()
    )
    again = run_worker(run, argv, str(tmp_path))
    assert "6 already done" in " ".join(again.stdout.split())


def test_a_failing_worker_reports_its_exit_code_and_last_line(tmp_path: Path) -> None:
    done = run_worker(
        run, ["--config", str(project(tmp_path)), "grade", "--judge", "nowhere/nothing"], str(tmp_path)
    )
    assert done.exit_code == 2
    assert done.last_line.startswith("error: unknown model provider 'nowhere'")


def test_a_worker_prints_piped_width_and_leaves_this_processs_consoles_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.cli.context import console

    monkeypatch.setenv("COLUMNS", "97")
    before = console.width  # 97, or the width an earlier command of this process fixed
    monkeypatch.delenv("COLUMNS")
    done = run_worker(run, ["models", "list"], str(tmp_path))
    assert done.exit_code == 0
    assert max(len(line) for line in done.stdout.splitlines()) > 80  # 120 columns, as piped output
    monkeypatch.setenv("COLUMNS", "97")
    assert console.width == before  # the worker fixed no width of its own here


def test_the_ray_executor_refuses_a_sqlite_store_in_one_line(tmp_path: Path) -> None:
    config = str(project(tmp_path, "ray"))
    done = run_worker(run, ["--config", config, "grade", "--judge", "offline/lexical"], str(tmp_path))
    assert done.exit_code == 2
    assert done.last_line.startswith("error: the Ray executor needs a PostgreSQL store that every worker")
    assert "livemed.db" in done.last_line


def test_an_unknown_executor_is_refused(tmp_path: Path) -> None:
    argv = ["--config", str(project(tmp_path)), "grade", "--judge", "offline/lexical", "--executor", "dask"]
    done = run_worker(run, argv, str(tmp_path))
    assert done.exit_code == 2
    assert done.last_line == "error: --executor must be one of inprocess, ray, got 'dask'"


def test_the_default_executor_imports_no_ray(tmp_path: Path) -> None:
    config = project(tmp_path)
    code = (
        "import sys\n"
        "from livemed.cli.application import run\n"
        "from livemed.cli.executors.inprocess import run_worker\n"
        f"r = run_worker(run, ['--config', {str(config)!r}, 'grade', '--judge', 'offline/lexical'])\n"
        "assert r.exit_code == 0, r.stderr\n"
        "print('ray' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
