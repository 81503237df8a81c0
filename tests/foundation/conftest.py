"""A demo project made once per session by the `livemed` program, for the docs and hints tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shell_docs import program_env, run_shell, tail


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`livemed demo`'s project folder (livemed.toml, a SQLite store, results/). Copy it before writing."""
    root = tmp_path_factory.mktemp("demo-project")
    done = run_shell("livemed demo --out project", root, program_env(root / "cache"))
    assert done.returncode == 0, tail(done)
    return root / "project"
