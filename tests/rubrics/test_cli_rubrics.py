"""`livemed rubrics` with a scripted LLM writer: rejections are kept, skipped, and retried on request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.models import Message, Settings
from livemed.models.fake import FakeModel
from livemed.models.registry import PROVIDERS
from livemed.records import Rejection, Rubric
from livemed.store import Store
from tests.builders import make_case
from tests.rubrics.test_write import STEP1, STEP2, STEP3

BROKEN = {"criteria": [{"index": i, "axis": "safety", "weight": -5} for i in range(4)]}
MODE = {"broken": True}


def writer(model_id: str) -> FakeModel:
    """A scripted writer for the `fake` provider: broken weights while MODE says so."""

    def reply(messages: list[Message], settings: Settings) -> str:
        text = messages[0]["content"]
        step3 = BROKEN if MODE["broken"] else STEP3
        for marker, payload in (("Step 1", STEP1), ("Step 2", STEP2), ("Step 3", step3)):
            if text.startswith(marker):
                return json.dumps(payload)
        return "cannot repair"

    return FakeModel(model_id, function=reply)


def run(store: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["--store", str(store), *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return " ".join(result.output.split())


def test_rejected_rubrics_are_skipped_then_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.rubrics.test_cli_rubrics:writer")
    monkeypatch.setitem(MODE, "broken", True)
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.put([make_case()])
    out = run(db, "rubrics", "--writer", "fake/writer", "--no-cache")
    assert "rejected (sign_mismatch): 1" in out
    assert "skipping 1 case(s) whose rubric was rejected" in run(db, "rubrics", "--writer", "fake/writer")
    monkeypatch.setitem(MODE, "broken", False)
    out = run(db, "rubrics", "--writer", "fake/writer", "--no-cache", "--retry-rejected")
    assert "wrote 1 rubric" in out
    with Store(db) as store:
        assert len(list(store.iter(Rubric))) == 1
        assert list(store.iter(Rejection)) == []
