"""Fixtures shared by the grading tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.grading.test_cli import run


@pytest.fixture
def kqa_store(tmp_path: Path, shared_data: Path) -> Path:
    store = tmp_path / "s.db"
    out = run(
        store,
        "import-kqa",
        str(shared_data / "k-qa" / "questions_w_answers.jsonl"),
        "--published",
        "2024-01-01",
        "--limit",
        "6",
    )
    assert "imported 6 case(s)" in out
    return store
