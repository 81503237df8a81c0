from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed import __version__
from livemed.cli import app
from livemed.jsonl import write_jsonl
from livemed.store import SCHEMA_VERSION, Store
from tests.foundation.factories import doc, every_record

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_version() -> None:
    code, out = invoke("--version")
    assert code == 0
    assert __version__ in out


def test_init_writes_a_config_and_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "livemed.toml"
    code, out = invoke("init", str(path), "--cutoff", "2025-01-31")
    assert code == 0
    assert f"wrote {path}" in out
    assert "cutoff = 2025-01-31" in path.read_text()
    code, _ = invoke("init", str(path))
    assert code != 0
    assert path.read_text().count("cutoff = 2025-01-31") == 1


def test_store_info_counts_records_by_kind(tmp_path: Path) -> None:
    store_path = tmp_path / "s.db"
    Store(store_path).put(every_record())
    code, out = invoke("--store", str(store_path), "store", "info")
    assert code == 0
    assert f"schema version {SCHEMA_VERSION}" in out
    assert f"store {store_path}" in out
    lines = {
        line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.splitlines() if "│" in line
    }
    assert lines["doc"] == "1"
    assert lines["grade_failure"] == "1"


def test_export_and_import_through_the_cli(tmp_path: Path) -> None:
    source = tmp_path / "a.db"
    Store(source).put(every_record())
    code, out = invoke("--store", str(source), "export", str(tmp_path / "out.jsonl"), "--kind", "doc")
    assert code == 0
    assert "exported 1 doc\n" in out
    target = tmp_path / "b.db"
    code, out = invoke("--store", str(target), "import", str(tmp_path / "out.jsonl"))
    assert code == 0
    assert Store(target).count() == {"doc": 1}


def test_import_reports_bad_lines_and_keeps_good_ones(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    write_jsonl([doc("1")], path)
    with path.open("a") as handle:
        handle.write("{broken\n")
    target = tmp_path / "b.db"
    result = runner.invoke(app, ["--store", str(target), "import", str(path)])
    assert result.exit_code == 1
    assert f"{path}:2" in result.output
    assert "imported 1 record(s), skipped 1 bad line(s)" in result.output
    assert Store(target).count() == {"doc": 1}


def test_unknown_kind_suggests_a_name(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["--store", str(tmp_path / "s.db"), "export", str(tmp_path / "o"), "--kind", "cas"]
    )
    assert result.exit_code != 0
    assert "did you mean 'case'" in str(result.exception) + result.output


def _livemed() -> str:
    found = shutil.which("livemed", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the livemed program is not installed next to this Python")
    return found


def test_installed_program_runs_and_user_errors_are_one_line(tmp_path: Path) -> None:
    exe = _livemed()
    env = {**os.environ, "LIVEMED_STORE": str(tmp_path / "s.db")}
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0
    assert __version__ in done.stdout
    done = subprocess.run(
        [exe, "--config", str(tmp_path / "missing.toml"), "store", "info"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: config file {tmp_path / 'missing.toml'} does not exist (run `livemed init` to write one)"
    ]
    assert "Traceback" not in done.stderr


def test_installed_program_store_round_trip(tmp_path: Path) -> None:
    exe = _livemed()
    path = tmp_path / "in.jsonl"
    write_jsonl(every_record(), path)
    env = {**os.environ, "LIVEMED_STORE": str(tmp_path / "s.db")}
    done = subprocess.run([exe, "import", str(path)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([exe, "store", "info"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0
    assert "run" in done.stdout
    assert Store(tmp_path / "s.db").count()["case"] == 1


def test_every_command_has_a_help_panel() -> None:
    panels = {info.rich_help_panel for info in app.registered_commands}
    assert "More" not in panels
    code, out = invoke("--help")
    assert code == 0
    listed = [line.split()[1] for line in out.splitlines() if line.startswith("│ ") and len(line.split()) > 2]
    order = [name for name in listed if name in ("demo", "harvest", "curate", "report")]
    assert order == ["demo", "harvest", "curate", "report"]


def test_messages_with_markup_characters_are_printed_verbatim(tmp_path: Path) -> None:
    exe = _livemed()
    path = tmp_path / "[bold]in.jsonl"
    path.write_text('{"kind": "doc", "source": "[/red]"}\n' + doc("1").model_dump_json() + "\n")
    env = {**os.environ, "LIVEMED_STORE": str(tmp_path / "s.db")}
    done = subprocess.run(
        [exe, "import", "--kind", "doc", str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "[bold]in.jsonl:1" in done.stderr
    assert "imported 1 record(s)" in done.stdout
    done = subprocess.run(
        [exe, "-c", str(tmp_path / "[/b].toml"), "store", "info"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "[/b].toml does not exist" in done.stderr


def test_a_file_that_is_not_a_store_is_a_one_line_error(tmp_path: Path) -> None:
    exe = _livemed()
    (tmp_path / "notes.db").write_text("not a database")
    done = subprocess.run(
        [exe, "--store", str(tmp_path / "notes.db"), "store", "info"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: cannot open store sqlite:///{tmp_path / 'notes.db'}: file is not a database"
    ]


def test_a_store_folder_that_cannot_be_created_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "livemed.toml").write_text("")  # a file where the store's folder should go
    store = tmp_path / "livemed.toml" / "x.db"
    (tmp_path / "empty.jsonl").write_text("")
    done = subprocess.run(  # a writing command: a read command says there is no store (test_read_commands)
        [_livemed(), "--store", str(store), "import", str(tmp_path / "empty.jsonl")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: cannot open store sqlite:///{store}: cannot create {store.parent}: File exists"
    ]
