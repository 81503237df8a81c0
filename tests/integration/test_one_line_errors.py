"""What a user sees is true: every error is one line, and an output is complete or absent.

Through the installed `livemed` program on a demo project (`livemed demo`, plus a release):

- a full disk (a file-size limit, `RLIMIT_FSIZE`, with SIGXFSZ ignored: writes fail with EFBIG), a
  read-only folder and a path under a file give one line and exit 2 for `release export`, `export`,
  `export-healthbench` and `report`, and leave nothing behind (no half-written file, no temporary);
- a failed export over an earlier one leaves the earlier one whole (it still verifies);
- `--seed -1` is refused before any request is sent; `release create ../../x` is one line;
- an `eval --max-cost` stop prints no asyncio "Task exception was never retrieved";
- a killed Run shows `interrupted` in `store info`, `store runs` and `export -k run` at once;
- `--debug` shows the traceback above the one line.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from livemed.records import Answer, Release, Run, utcnow
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer

LIVEMED = Path(sys.executable).parent / "livemed"
MODEL = "openai/fake-gpt"
KEY_ENV = "LIVEMED_ONE_LINE_TEST_KEY"
FULL_DISK_BYTES = 64 * 1024  # every output below is larger; the store is only read


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo project (store, cases, rubrics, answers, grades, scores) with a release `v1`."""
    folder = tmp_path_factory.mktemp("project") / "demo"
    made = subprocess.run([str(LIVEMED), "demo", "--out", str(folder)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    released = livemed(folder, "release", "create", "v1", "--until", "2030-01-01")
    assert released.returncode == 0, released.stderr
    return folder


def livemed(
    cwd: Path, *argv: str, before: Callable[[], None] | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
    return subprocess.run(
        [*prefix, str(LIVEMED), *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=before,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The command's stderr, which must be one `error: …` line."""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), done.stderr
    return lines[0]


def full_disk() -> None:
    """In the child: no file may grow past FULL_DISK_BYTES (a write past it fails: EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FULL_DISK_BYTES, FULL_DISK_BYTES))


# command -> (its arguments for an output `target` (no suffix), the output path it writes)
OUTPUTS: dict[str, Callable[[Path], tuple[list[str], Path]]] = {
    "release export jsonl": lambda t: (["release", "export", "v1", "--format", "jsonl", "--out", str(t)], t),
    "release export hf": lambda t: (["release", "export", "v1", "--format", "hf", "--out", str(t)], t),
    "export folder": lambda t: (["export", str(t)], t),
    "export file": lambda t: (["export", f"{t}.jsonl"], Path(f"{t}.jsonl")),
    "export-healthbench": lambda t: (["export-healthbench", f"{t}.jsonl"], Path(f"{t}.jsonl")),
    "report": lambda t: (["report", "--out", f"{t}.html"], Path(f"{t}.html")),
}


@pytest.mark.parametrize("command", OUTPUTS)
def test_a_full_disk_leaves_no_partial_output_and_one_line(
    project: Path, tmp_path: Path, command: str
) -> None:
    argv, written = OUTPUTS[command](tmp_path / "out" / "x")
    done = livemed(project, *argv, before=full_disk)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line(done)
    assert line.startswith(f"error: cannot write {tmp_path / 'out' / 'x'}"), line
    assert line.endswith(": File too large"), line
    assert not written.exists()
    assert [p.name for p in (tmp_path / "out").iterdir()] == []  # no temporary, no report tables either


def test_a_failed_export_over_an_earlier_one_leaves_that_one_whole(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "release"
    first = livemed(project, "release", "export", "v1", "--format", "jsonl", "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = ["release", "export", "v1", "--format", "jsonl", "--out", str(out), "--embargo-days", "400"]
    failed = livemed(project, *again, before=full_disk)
    assert failed.returncode == 2
    assert one_line(failed) == f"error: cannot write {out}: File too large"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert livemed(project, "release", "verify", str(out)).returncode == 0

    done = livemed(project, *again)  # the new export replaces the old one, file by file, manifest last
    assert done.returncode == 0, done.stderr
    assert (out / "manifest.json").read_bytes() != before["manifest.json"]
    assert livemed(project, "release", "verify", str(out)).returncode == 0


def unprivileged() -> tuple[str, ...]:
    """A command prefix under which a read-only folder is read-only (root may write anywhere)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    caps = "-dac_override,-dac_read_search"
    return (setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}")


@pytest.mark.parametrize("command", OUTPUTS)
def test_a_read_only_folder_is_one_line(project: Path, tmp_path: Path, command: str) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        argv, written = OUTPUTS[command](folder / "x")
        done = livemed(project, *argv, prefix=unprivileged())
    finally:
        folder.chmod(0o755)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line(done)
    assert line.startswith(f"error: cannot write {folder / 'x'}"), line
    assert line.endswith(": Permission denied"), line
    assert not written.exists()
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("command", OUTPUTS)
def test_a_path_under_a_file_is_one_line(project: Path, tmp_path: Path, command: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    argv, written = OUTPUTS[command](blocker / "x")
    done = livemed(project, *argv)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line(done)
    assert line.startswith(f"error: cannot write {blocker / 'x'}"), line
    assert line.endswith(f": {blocker} is a file, not a folder"), line
    assert not written.exists()
    assert blocker.read_text() == "not a folder\n"


def test_debug_shows_the_traceback_above_the_line(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    plain = livemed(project, "export", str(blocker / "x"))
    debug = livemed(project, "--debug", "export", str(blocker / "x"))
    assert "Traceback" not in plain.stderr
    assert debug.returncode == plain.returncode == 2
    assert debug.stderr.startswith("Traceback (most recent call last):")
    assert "livemed.errors.OutputError" in debug.stderr
    assert debug.stderr.splitlines()[-1] == one_line(plain)


def _model_project(tmp_path: Path, project: Path, base_url: str) -> Path:
    """The demo's store copied, with `MODEL` served by `base_url` at $1 per 1,000 tokens."""
    shutil.copy(project / "livemed.db", tmp_path / "livemed.db")
    (tmp_path / "livemed.toml").write_text(
        f'store = "livemed.db"\ncutoff = 2024-01-01\n[models."{MODEL}"]\nbase_url = "{base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_concurrency = 4\n'
        f'[prices."{MODEL}"]\ninput = 1000\noutput = 1000\n',
        encoding="utf-8",
    )
    return tmp_path


def test_a_negative_seed_is_refused_before_any_call(project: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behavior(text="Rest and fluids.")) as server:
        folder = _model_project(tmp_path, project, server.base_url)
        done = livemed(folder, "eval", "-m", MODEL, "--judge", "offline/lexical", "--seed", "-1")
        assert done.returncode == 2, done.stdout + done.stderr
        assert one_line(done).startswith("error: livemed eval: Invalid value for '--seed'")
        assert server.chat_requests == []  # nothing was paid for
    with Store(folder / "livemed.db") as store:
        assert not [a for a in store.iter(Answer) if a.model == MODEL]
        assert not [r for r in store.iter(Run) if r.command == "eval"]
    for command in (["scores", "--judge", "offline/lexical"], ["leaderboard"]):
        refused = livemed(folder, *command, "--seed", "-1")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "Invalid value for '--seed'" in one_line(refused)


def test_an_eval_whose_results_cannot_be_written_is_refused_before_any_call(
    project: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer(default=Behavior(text="Rest and fluids.")) as server:
        folder = _model_project(tmp_path, project, server.base_url)
        blocker = folder / "a-file"
        blocker.write_text("")
        argv = ["eval", "-m", MODEL, "--judge", "offline/lexical", "--convention", "healthbench"]
        done = livemed(folder, *argv, "--json", str(blocker / "results.json"))
        assert done.returncode == 2, done.stdout + done.stderr
        line = f"error: cannot write {blocker / 'results.json'}: {blocker} is a file, not a folder"
        assert one_line(done) == line
        assert server.chat_requests == []


def test_a_taxonomy_whose_tables_cannot_be_written_is_refused_before_any_call(
    project: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer(default=Behavior(text='{"rationale": "fine", "category": "NCE"}')) as server:
        folder = _model_project(tmp_path, project, server.base_url)
        blocker = folder / "a-file"
        blocker.write_text("")
        argv = ["taxonomy", "--judge", "offline/lexical", "--classifier", MODEL, "--out", str(blocker / "t")]
        done = livemed(folder, *argv)
        assert done.returncode == 2, done.stdout + done.stderr
        assert (
            one_line(done)
            == f"error: cannot write {blocker / 't' / 'taxonomy.csv'}: {blocker} is a file, not a folder"
        )
        assert server.chat_requests == []


def test_a_release_name_that_is_a_path_is_one_line(project: Path, tmp_path: Path) -> None:
    shutil.copy(project / "livemed.db", tmp_path / "livemed.db")
    done = livemed(tmp_path, "--store", "livemed.db", "release", "create", "../../x", "--until", "2030-01-01")
    assert done.returncode == 2
    assert one_line(done) == (
        "error: a release name is letters, digits, '.', '_' and '-' (starting with a letter or digit, "
        "at most 128), got '../../x'"
    )
    with Store(tmp_path / "livemed.db") as store:
        assert [r.name for r in store.iter(Release)] == ["v1"]


def test_a_max_cost_stop_is_one_line_without_asyncio_noise(project: Path, tmp_path: Path) -> None:
    """Two candidates and a grader stop on one budget together: each stage's error is read."""
    with FakeOpenAIServer(default=Behavior(text="Rest and fluids.", latency=0.05)) as server:
        folder = _model_project(tmp_path, project, server.base_url)
        argv = ["eval", "-m", MODEL, "-m", "offline/reference", "--judge", MODEL, "--max-cost", "2"]
        done = livemed(folder, *argv)
        assert len(server.chat_requests) > 0
    assert done.returncode == 1, done.stdout + done.stderr
    assert "never retrieved" not in done.stderr
    assert one_line(done).startswith("error: stopping before exceeding --max-cost $2.00")


def _run(run_id: str, *, pid: int, host: str, heartbeat_ago_s: float) -> Run:
    beat = utcnow() - timedelta(seconds=heartbeat_ago_s)
    return Run(run_id=run_id, command="answer", pid=pid, host=host, started_at=beat, heartbeat_at=beat)


def test_a_killed_run_shows_interrupted_at_once(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    here = socket.gethostname()
    with Store(tmp_path / "s.db") as store:
        store.put(
            [
                _run("killed", pid=gone.pid, host=here, heartbeat_ago_s=1),  # its process is gone
                _run("silent", pid=1, host="elsewhere", heartbeat_ago_s=600),  # no heartbeat for 10 min
                _run("alive", pid=os.getpid(), host=here, heartbeat_ago_s=1),  # this test's process
            ]
        )
    info = livemed(tmp_path, "--store", "s.db", "store", "info")
    assert info.returncode == 0, info.stderr
    assert "runs: 2 interrupted · 1 running (livemed store runs lists them)" in info.stdout
    listed = livemed(tmp_path, "--store", "s.db", "store", "runs")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("│") for line in listed.stdout.splitlines() if line.startswith("│")]
    outcome = {cells[1].strip(): cells[4].strip() for cells in rows}
    assert outcome == {"killed": "interrupted", "silent": "interrupted", "alive": "running"}
    assert f"process {gone.pid} on {here} ended without finishing" in listed.stdout
    exported = livemed(tmp_path, "--store", "s.db", "export", "runs.jsonl", "-k", "run")
    assert exported.returncode == 0, exported.stderr
    text = (tmp_path / "runs.jsonl").read_text()
    assert text.count('"outcome": "interrupted"') == 2
    assert text.count('"outcome": "running"') == 1
    with Store(tmp_path / "s.db") as store:  # shown as they stand; nothing was written to show it
        assert {r.run_id: r.outcome for r in store.iter(Run)} == dict.fromkeys(
            ("killed", "silent", "alive"), "running"
        )
