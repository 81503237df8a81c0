"""`livemed update` composes the medical stages: a project set to another domain is told so, not half-run."""

from __future__ import annotations

from pathlib import Path

from livemed.records import Doc
from livemed.store import Store
from tests.live.helpers import program, project


def test_update_in_a_legal_project_says_it_runs_the_medical_pack_only(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=3)
    config.write_text('domain = "legal"\n' + config.read_text("utf-8"), "utf-8")
    result = program(config, "update")
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "runs the medical pack only" in line
    assert "--domain" in line
    db = config.parent / "livemed.db"
    if db.exists():  # nothing was harvested before the refusal
        with Store(f"sqlite:///{db}") as store:
            assert list(store.iter(Doc)) == []
