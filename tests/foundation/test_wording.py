"""Messages a new user reads: plurals, export summaries, a missing kind, one model prefix, --version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.cli.context import counted
from livemed.jsonl import record_from
from livemed.models import Engine
from livemed.models.base import FatalModelError
from livemed.models.fake import FakeModel
from livemed.store import Store
from tests.foundation.factories import every_record

runner = CliRunner()


def test_counts_name_their_kind_in_the_plural() -> None:
    assert counted(33, "rubric") == "33 rubrics"
    assert counted(1, "rubric") == "1 rubric"
    assert counted(2, "grade_failure") == "2 grade failures"


def test_exporting_everything_to_one_file_says_records_of_all_kinds(tmp_path: Path) -> None:
    Store(tmp_path / "a.db").put(every_record())
    result = runner.invoke(app, ["--store", str(tmp_path / "a.db"), "export", str(tmp_path / "all.jsonl")])
    assert result.exit_code == 0, result.output
    total = len((tmp_path / "all.jsonl").read_text().splitlines())
    assert f"exported {total} records (all kinds)" in result.output
    assert "all record" not in result.output


def test_a_line_without_a_kind_says_so_not_kind_none() -> None:
    with pytest.raises(ValueError, match="no 'kind' field") as caught:
        record_from(json.loads('{"id": "x"}'))
    assert "None" not in str(caught.value)


async def test_a_fatal_model_error_is_logged_with_the_model_id_once(caplog: pytest.LogCaptureFixture) -> None:
    model = FakeModel("fake/judge", responses=[FatalModelError("fake/judge: HTTP 401 from http://x")])
    with caplog.at_level("INFO", logger="livemed.models"):
        await Engine().generate(model, [{"role": "user", "content": "a"}])
    assert "fake/judge: HTTP 401" in caplog.text
    assert "fake/judge: fake/judge" not in caplog.text


def test_version_is_a_flag_without_a_metavar() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    line = next(line for line in result.output.splitlines() if "--version" in line)
    assert "<bool>" not in line
    assert "Print the version" in line
