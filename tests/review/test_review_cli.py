"""`livemed review sample|invite|export|import|serve` through the program."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import typer
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import UserError
from livemed.records import AuditSample, Label
from livemed.review.tokens import reviewer_for
from livemed.store import Store
from tests.cli.test_stage_commands import run
from tests.review.conftest import JUDGE


def _copy(demo_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    shutil.copy(demo_db, path)
    return path


def test_sample_draws_stores_and_prints_each_stratum(demo_db: Path, tmp_path: Path) -> None:
    path = _copy(demo_db, tmp_path)
    out = run(
        path, "review", "sample", "--judge", JUDGE, "--size", "30", "--seed", "4", "--double-share", "0.5"
    )
    store = Store(path)
    sample = store.get(AuditSample, f"audit_sample:{JUDGE}")
    store.close()
    assert sample is not None
    assert (len(sample.items), sample.seed, sample.double_share) == (30, 4, 0.5)
    for stratum in sample.strata:
        assert f"{stratum.key} {stratum.population} {stratum.drawn} {stratum.inclusion:.3f}" in out.replace(
            "│", ""
        ).replace("  ", " ")
    assert f"{sum(i.double for i in sample.items)} item(s) for two reviewers" in out
    run(path, "review", "sample", "--judge", JUDGE, "--size", "10", "--seed", "9")
    store = Store(path)
    assert [(s.seed, len(s.items)) for s in store.iter(AuditSample)] == [(9, 10)]  # drawn again: replaced
    store.close()


def _fails(path: Path, *args: str) -> UserError:
    """The user error `livemed ARGS` ends with (exit 2, one line, in `livemed.cli.run`)."""
    result = CliRunner().invoke(app, ["--store", str(path), *args])
    assert isinstance(result.exception, UserError), result.output
    assert result.exception.exit_code == 2
    return result.exception


def test_sample_of_a_grader_with_no_verdicts_is_a_user_error(demo_db: Path, tmp_path: Path) -> None:
    error = _fails(_copy(demo_db, tmp_path), "review", "sample", "--judge", "fake/none", "--size", "5")
    assert "no verdicts of grader 'fake/none'" in str(error)


def test_invite_prints_a_working_link_on_the_given_port(demo_db: Path, tmp_path: Path) -> None:
    path = _copy(demo_db, tmp_path)
    out = run(path, "review", "invite", "dr.ada", "--port", "9001")
    found = re.search(r"http://127\.0\.0\.1:9001/login\?token=([A-Za-z0-9_-]{43})", out)
    assert found, out
    again = run(path, "review", "invite", "dr.ada")
    assert "http://127.0.0.1:8765/login?token=" in again
    store = Store(path)
    assert reviewer_for(store, found.group(1)) is None  # the new link replaced it
    store.close()
    assert "reviewer name 'no spaces'" in str(_fails(path, "review", "invite", "no spaces"))


def test_labels_go_out_and_come_back_and_bad_lines_are_named(demo_db: Path, tmp_path: Path) -> None:
    path = _copy(demo_db, tmp_path)
    labels = tmp_path / "in.jsonl"
    good = {"reviewer": "ada", "queue": "audit", "item_id": "grade:a:b:c", "verdict": "met"}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps(good | {"verdict": "maybe"}),
        json.dumps(good | {"queue": "elsewhere"}),
        json.dumps(good | {"reviewer": "bo"}),
    ]
    labels.write_text("\n".join(lines) + "\n")
    out = run(path, "review", "import", str(labels), code=1)
    assert "imported 2 label(s), skipped 3 bad line(s)" in out
    assert f"{labels}:2:" in out
    assert f"{labels}:3:" in out
    assert f"{labels}:4:" in out
    exported = tmp_path / "out.jsonl"
    assert f"{exported}: wrote 2 label(s)" in run(path, "review", "export", str(exported))
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert sorted(row["reviewer"] for row in rows) == ["ada", "bo"]
    store = Store(path)
    assert len(list(store.iter(Label))) == 2
    store.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_listens_on_127_0_0_1_unless_told_otherwise() -> None:
    root: Any = typer.main.get_command(app)
    serve = root.get_command(None, "review").get_command(None, "serve")
    defaults = {param.name: param.default for param in serve.params}
    assert (defaults["host"], defaults["port"]) == ("127.0.0.1", 8765)


def test_serve_listens_on_127_0_0_1_and_refuses_without_a_session(demo_db: Path, tmp_path: Path) -> None:
    path, port = _copy(demo_db, tmp_path), _free_port()
    command = "from livemed.cli import main; main()"
    args = [sys.executable, "-c", command, "--store", str(path), "review", "serve", "--port", str(port)]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        response = None
        for _ in range(200):
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.ConnectError:
                assert server.poll() is None, server.communicate()[0]
                time.sleep(0.05)
        assert response is not None
        assert response.status_code == 401
        assert (
            response.text
            == "no review session: open your invite link (`livemed review invite NAME` prints one)\n"
        )
    finally:
        server.terminate()
        output = server.communicate(timeout=15)[0]
    assert f"review app on http://127.0.0.1:{port}/" in output
