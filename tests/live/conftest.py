"""Fixtures of the live tests: a project after one offline update, copied per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.helpers import cli, project


@pytest.fixture(scope="module")
def updated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project after one offline update of 10 demo documents (its store is copied per test)."""
    config = project(tmp_path_factory.mktemp("live") / "p", docs=10)
    result = cli(config, "update")
    assert result.exit_code == 0, result.output
    return config


@pytest.fixture
def config(updated: Path, tmp_path: Path) -> Path:
    fresh = project(tmp_path / "p", docs=10)
    (fresh.parent / "livemed.db").write_bytes((updated.parent / "livemed.db").read_bytes())
    return fresh
