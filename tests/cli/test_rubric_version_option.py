"""`--rubric-version` on `grade`, `scores` and `report`: the commands a user runs after reviewers changed
rubrics (the stage functions are tested in tests/grade and tests/score)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from livemed.models.fake import FakeModel
from livemed.models.registry import PROVIDERS
from livemed.store import Store
from tests.builders import WORDS, review, reviewable_store, word_grader
from tests.cli.test_stage_commands import run

MADE: list[FakeModel] = []  # every model the commands made, so their calls can be counted


def counting_provider(model_id: str) -> FakeModel:
    model = FakeModel(model_id, function=word_grader)
    MADE.append(model)
    return model


def calls() -> int:
    return sum(len(m.calls) for m in MADE)


@pytest.fixture
def reviewed_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two cases graded on the writer's rubrics and scored, then changed by a reviewer (tests.builders)."""
    monkeypatch.setitem(PROVIDERS, "fake", "tests.cli.test_rubric_version_option:counting_provider")
    MADE.clear()
    path = tmp_path / "s.db"
    with Store(path) as store:
        reviewable_store(store)
    run(path, "grade", "--judge", WORDS)
    # 12 grades, 6 calls: case demo:1's grading prompts are demo:0's (the same conversation and answers),
    # and the same request is never paid twice (the second is the first's cached reply)
    assert calls() == 6
    run(path, "scores", "--judge", WORDS, "--json", str(tmp_path / "writer.json"))
    with Store(path) as store:
        review(store)
    return path


def test_grade_then_scores_on_the_reviewed_rubrics(reviewed_store: Path, tmp_path: Path) -> None:
    text = run(reviewed_store, "scores", "--judge", WORDS, "--rubric-version", "latest-approved", code=1)
    assert "rubrics: latest-approved (a reviewed version for 2 of 2 cases)" in text
    assert f"graded by `livemed grade --judge {WORDS} --rubric-version latest-approved`" in text
    assert "answers left out (not yet graded" in text

    text = run(reviewed_store, "grade", "--judge", WORDS, "--rubric-version", "latest-approved")
    assert calls() == 8  # the edited criterion, for case 0's two answers
    assert "on the reviewed rubrics (latest-approved)" in text
    run(reviewed_store, "grade", "--judge", WORDS, "--rubric-version", "latest-approved")
    assert calls() == 8  # a second run pays nothing

    out = tmp_path / "reviewed.json"
    args = ("scores", "--judge", WORDS, "--rubric-version", "latest-approved", "--json", str(out))
    text = run(reviewed_store, *args)
    assert "2 of 2 cases reviewed" in text
    means = {m["model"]: m["score"] for m in json.loads(out.read_text())["models"]}
    assert means == pytest.approx({"fake/candidate": (1.0 + 0.6) / 2, "fake/other": (4 / 6 + 0.2) / 2})
    assert json.loads(out.read_text())["rubric_version"] == "latest-approved"
    writer = json.loads((tmp_path / "writer.json").read_text())
    assert {m["model"]: m["score"] for m in writer["models"]} == pytest.approx(
        {"fake/candidate": 0.6, "fake/other": 0.2}
    )
    run(reviewed_store, "scores", "--judge", WORDS, "--json", str(out))  # the default: writer rubrics
    assert json.loads(out.read_text())["models"] == writer["models"]


def test_the_report_on_reviewed_rubrics_says_so(reviewed_store: Path, tmp_path: Path) -> None:
    run(reviewed_store, "grade", "--judge", WORDS, "--rubric-version", "latest-approved")
    run(reviewed_store, "scores", "--judge", WORDS, "--rubric-version", "latest-approved")
    page = tmp_path / "reviewed.html"
    run(reviewed_store, "report", "--rubric-version", "latest-approved", "--out", str(page))
    html = page.read_text()
    assert "rubrics: each case's newest reviewed version (latest-approved)" in html
    table = json.loads((tmp_path / "reviewed-tables" / "leaderboard.json").read_text())
    assert table["summary"]["rubric_version"] == "latest-approved"
    plain = tmp_path / "writer.html"
    run(reviewed_store, "report", "--out", str(plain))
    assert 'id="rubric-version"' not in plain.read_text()


def test_an_unknown_rubric_version_is_refused_in_one_line(
    reviewed_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.cli.application import run as livemed

    monkeypatch.setenv("COLUMNS", "120")  # else the run widens this process's consoles for later tests

    for command in (("grade", "--judge", WORDS), ("scores", "--judge", WORDS), ("report",)):
        with pytest.raises(SystemExit) as exit_:
            livemed(["--store", str(reviewed_store), *command, "--rubric-version", "newest"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.strip() == "error: --rubric-version must be writer or latest-approved, got 'newest'"
