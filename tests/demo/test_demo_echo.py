"""The demo echoes each step as a command that can be pasted into a shell."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.cli import demo as demo_module


def test_echoed_steps_are_shell_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(demo_module, "_run", lambda argv: ran.append(argv[4:]))
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "d")], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    echoed = [line[2:] for line in result.output.splitlines() if line.startswith("$ livemed ")]
    assert len(echoed) == len(ran) > 0
    assert [shlex.split(line)[1:] for line in echoed] == ran  # pasted, each line runs exactly that step
    assert "$ livemed report --title 'livemed demo report'" in result.output
