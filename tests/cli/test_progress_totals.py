"""Progress bars know their totals: items done of items planned, already-done items counted as done."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.cli.common import progress_for, stage_progress
from livemed.curate.chain import pending_docs
from livemed.demo import demo_evidence_path
from livemed.grade.grader import Target
from livemed.grade.stage import GradePlan, grade_all
from livemed.models import Engine
from livemed.pipeline.runner import item_progress
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.grade.test_judge import judge, scripted_by_criterion


def test_an_offline_stage_bar_shows_its_total() -> None:
    with progress_for(Engine(), "offline/lexical", "grading", total=7) as progress:
        [task] = progress.tasks  # type: ignore[attr-defined]
        assert task.total == 7
    with stage_progress("answers") as progress:
        assert progress.tasks[0].total is None  # none given: rich shows `n/?`


async def test_grading_reports_criteria_done_up_to_the_plans_total(sqlite_store: Store) -> None:
    case = make_case()
    t = Target(make_answer(case, "Take colchicine."), case, make_rubric(case))
    sqlite_store.put([t.case, t.rubric, t.answer])
    total = GradePlan(targets=[t]).items("per-criterion")
    assert total == len(t.rubric.criteria) == 3
    assert GradePlan(targets=[t]).items("batched") is None
    for _ in range(2):  # the second run finds every criterion already graded
        seen: list[int] = []
        token = item_progress.set(seen.append)
        try:
            await grade_all(sqlite_store, [t], judge(function=scripted_by_criterion))
        finally:
            item_progress.reset(token)
        assert seen
        assert seen[-1] == total


def test_a_rule_based_curation_bar_counts_the_pending_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.cli import common

    totals: list[int | None] = []
    real = common.progress_for

    def recording(engine: Engine, model_id: str, description: str, *, total: int | None = None) -> object:
        totals.append(total)
        return real(engine, model_id, description, total=total)

    monkeypatch.setattr(common, "progress_for", recording)
    db = str(tmp_path / "s.db")
    assert (
        CliRunner()
        .invoke(app, ["--store", db, "harvest", "--source", "demo", "--since", "2024-01-01"])
        .exit_code
        == 0
    )
    with Store(db) as store:
        pending = sum(1 for _ in pending_docs(store))
    assert pending > 10
    result = CliRunner().invoke(app, ["--store", db, "curate", "--evidence", str(demo_evidence_path())])
    assert result.exit_code == 0, result.output
    assert totals == [pending]
