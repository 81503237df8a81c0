"""Batched against per-criterion grading (`judges.modes`, `livemed judges modes`), scripted judges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from livemed.common.prompts import parse_blocks
from livemed.grade.grader import Target
from livemed.judges.modes import compare_modes
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.models.registry import PROVIDERS
from livemed.records import Grade
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.cli.test_stage_commands import run


def halo_judge(model_id: str = "fake/halo") -> FakeModel:
    """Per criterion: met for positive points. Batched: drops the last verdict of a rubric and says
    "met" for every criterion it answers (the halo a whole rubric with weights invites)."""

    def reply(messages: list[Message], settings: Settings) -> str:
        blocks = [b for b in parse_blocks(messages[0]["content"]) if b.name == "criterion"]
        numbered = [int(b.attrs["id"]) for b in blocks if "id" in b.attrs]
        if numbered:
            return json.dumps(
                {
                    "verdicts": [
                        {"id": n, "explanation": "looks fine", "criteria_met": True} for n in numbered[:-1]
                    ]
                }
            )
        return json.dumps(
            {"explanation": "scripted", "criteria_met": not blocks[0].attrs["points"].startswith("-")}
        )

    return FakeModel(model_id, function=reply)


async def test_agreement_and_failure_rates_per_mode() -> None:
    targets = []
    for n in range(2):
        case = make_case(f"demo:{n}")
        targets.append(Target(make_answer(case), case, make_rubric(case)))  # 2 positive, 1 negative each
    result = await compare_modes(targets, LLM(Engine(), halo_judge()))
    assert (result.answers, result.criteria, result.compared) == (2, 6, 4)
    assert dict(result.failures["batched"]) == {"missing_verdict": 2}
    assert dict(result.failures["per-criterion"]) == {}
    assert result.failure_rate("batched") == pytest.approx(2 / 6)
    assert result.agreement is not None
    assert result.agreement.accuracy == 1.0  # the verdicts both modes gave agree...
    assert result.batched_only_met == 0
    assert result.calls_failed == 0


async def test_a_halo_flip_lowers_the_agreement() -> None:
    case = make_case()
    rubric = make_rubric(case)
    reordered = rubric.model_copy(update={"criteria": [rubric.criteria[2], *rubric.criteria[:2]]})
    result = await compare_modes([Target(make_answer(case), case, reordered)], LLM(Engine(), halo_judge()))
    # the negative criterion comes first now: batched calls it met, per-criterion not met
    assert result.batched_only_met == 1
    assert result.agreement is not None
    assert result.agreement.accuracy == pytest.approx(1 / 2)


def test_judges_modes_through_the_cli(
    kqa_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.judges.test_modes:halo_judge")
    run(kqa_store, "rubrics", "--writer", "offline/rules", "--limit", "2")
    run(kqa_store, "answer", "--model", "offline/reference", "--limit", "2")
    out_json = tmp_path / "modes.json"
    out = run(kqa_store, "judges", "modes", "--judge", "fake/halo", "--json", str(out_json))
    assert "batched vs per-criterion (reference): agreement" in out
    assert "batched failures: " in out
    assert "missing_verdict 2" in out
    data = json.loads(out_json.read_text())
    assert data["failures"]["batched"] == {"missing_verdict": 2}
    assert data["answers"] == 2
    with Store(kqa_store) as store:
        assert not [g for g in store.iter(Grade) if g.judge == "fake/halo"]  # a measurement: nothing stored
