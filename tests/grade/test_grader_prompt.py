"""The grader's rules (HealthBench's exceptions, the context clause, worked examples) and
`--grader-template` (the bytes sent change, checked at the local fake OpenAI-compatible server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.common.prompts import outside_blocks
from livemed.config import Config, ModelConfig
from livemed.errors import ConfigError
from livemed.grade.grader import Target, grade_batch, per_criterion_messages
from livemed.grade.stage import grade_all
from livemed.grade.template import load_template, parse_template, with_template
from livemed.models import LLM, Engine, get_model
from livemed.records import Criterion, Grade
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.fakes.openai_server import FakeOpenAIServer, judge_responder

KEY_ENV = "LIVEMED_TEST_JUDGE_KEY"
MODEL = "openai/fake-judge"
INCLUDING = Criterion(
    text="Lists red-flag symptoms to watch for, including fever, chest pain or confusion",
    polarity="positive",
    axis="safety",
    weight=6,
)
CONTEXT_NEGATIVE = Criterion(
    text="Recommends naproxen despite the patient's kidney disease",
    polarity="negative",
    axis="safety",
    weight=-9,
)


def _rules_of(criterion: Criterion) -> str:
    (message,) = per_criterion_messages([{"role": "user", "content": "my toe hurts"}], "a reply", criterion)
    return outside_blocks(message["content"])  # the grader's own words, not the case's


def test_the_rules_for_a_criterion_with_including_and_at_least_one_of() -> None:
    rules = _rules_of(INCLUDING)
    assert '"including"' in rules
    assert "need\n  not include all of them" in rules
    assert 'alternatives by "or"' not in rules  # alternatives are the criterion's to state, not a rule
    assert 'When it says "at least one of", one\n  of the items it lists is enough' in rules
    assert "clearly" not in rules  # HealthBench's grader has no "clearly"
    assert "Positive criterion (points 5)" in rules  # the positive worked example
    assert "a different value does not meet the criterion" in rules  # a stated value is a requirement


def test_a_worked_example_ends_false_for_a_wrong_dose() -> None:
    rules = _rules_of(INCLUDING)
    assert "criteria_met: false (the response gives paracetamol, but every three hours" in rules
    assert "criteria_met: true (1 g every three hours is more than 4 g a day" in rules


def test_the_rules_for_a_negative_criterion_with_a_context_clause() -> None:
    rules = _rules_of(CONTEXT_NEGATIVE)
    assert "whether or not it restates the context" in rules
    assert "Negative criterion (points -8)" in rules  # the negative worked example
    assert "criteria_met: true (the response recommends" in rules
    assert "Do\n  not flip your verdict because the points are negative" in rules


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{conversation}\n{response}\n", "needs {conversation}, {response} and {criterion}"),
        ("<<conversation>> only", "needs both <<conversation>> and <<rubric_item>>"),
        ("<<conversation>>\n<<rubric_item>>\n{criterion}\n", "mixes"),
        ("{conversation}\n{response}\nItem: {criterion}", "on a line of its own"),
    ],
)
def test_a_template_without_its_placeholders_is_one_line(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        parse_template(text)


async def _grade(store: Store, template_text: str | None) -> tuple[list[dict[str, object]], list[Grade]]:
    case = make_case()
    work = [Target(make_answer(case, "Take naproxen twice a day."), case, make_rubric(case))]
    with FakeOpenAIServer(responder=judge_responder()) as server:
        config = Config(
            models={MODEL: ModelConfig(base_url=server.base_url, api_key_env=KEY_ENV, timeout_s=5)}
        )
        async with Engine(store=None, config=config, cache="off") as engine:
            judge = LLM(engine, get_model(MODEL, config=config), stage="grade")
            if template_text is not None:
                judge = with_template(judge, parse_template(template_text, "mine.txt"))
            await grade_all(store, work, judge)
        bodies = [r.body for r in server.chat_requests if r.body is not None]
    return bodies, [g for g in store.iter(Grade) if g.judge == judge.id]


async def test_a_grader_template_changes_the_bytes_sent(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    own, own_grades = await _grade(sqlite_store, None)
    template = "HB-STYLE GRADER\n<<conversation>>\n\nITEM <<rubric_item>>\nReturn JSON.\n"
    sent, grades = await _grade(sqlite_store, template)
    assert len(sent) == len(own) == 3
    first = sent[0]["messages"][0]["content"]  # type: ignore[index]
    assert first.startswith("HB-STYLE GRADER\nuser: ")
    assert "\n\nassistant: Take naproxen twice a day.\n\nITEM [6] Advises colchicine" in first
    assert "How to judge" not in first
    assert "How to judge" in own[0]["messages"][0]["content"]  # type: ignore[index]
    hashed = parse_template(template).hash
    assert {g.judge for g in grades} == {f"{MODEL}@tpl-{hashed}"}  # other grades than the default's
    assert len(own_grades) == 3
    assert {g.judge for g in own_grades} == {MODEL}
    assert {g.provenance.prompt_hash for g in grades} == {hashed}
    assert {g.provenance.settings["grader_template"] for g in grades} == {f"mine.txt sha256:{hashed}"}


async def test_a_template_is_per_criterion_only(tmp_path: Path) -> None:
    path = tmp_path / "grader.txt"
    path.write_text("{conversation}\n{response}\n{criterion}\n", encoding="utf-8")
    judge = with_template(LLM(Engine(), get_model("fake/x")), load_template(path))
    case = make_case()
    with pytest.raises(ValueError, match="per-criterion"):
        await grade_batch(Target(make_answer(case), case, make_rubric(case)), [], judge)


def test_grade_with_a_grader_template_through_the_cli(
    kqa_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.models.registry import PROVIDERS
    from livemed.records import Run
    from tests.cli.test_stage_commands import run

    monkeypatch.setitem(PROVIDERS, "fake", "tests.cli.test_stage_commands:scripted_judge")
    run(kqa_store, "rubrics", "--writer", "offline/rules", "--limit", "1")
    run(kqa_store, "answer", "--model", "offline/reference", "--limit", "1")
    template = tmp_path / "grader.txt"
    template.write_text("Mine.\n{conversation}\n{response}\n{criterion}\nJSON.\n", encoding="utf-8")
    hashed = parse_template(template.read_text(encoding="utf-8")).hash
    out = run(kqa_store, "grade", "--judge", "fake/judge", "--grader-template", str(template))
    assert f"grades by fake/judge@tpl-{hashed} (per-criterion)" in out
    board = run(kqa_store, "scores", "--judge", f"fake/judge@tpl-{hashed}")
    assert "offline/reference │ 1.000" in board
    with Store(kqa_store) as store:
        (graded,) = [r for r in store.iter(Run) if r.command == "grade"]
        assert graded.settings["grader_template"] == f"grader.txt sha256:{hashed}"
    for args, problem in (
        (["--judge", "offline/lexical"], "needs a model judge"),
        (["--judge", "fake/judge", "--mode", "batched"], "use --mode per-criterion"),
    ):
        result = CliRunner().invoke(
            app, ["--store", str(kqa_store), "grade", *args, "--grader-template", str(template)]
        )
        assert isinstance(result.exception, ConfigError)
        assert problem in str(result.exception)


def test_judges_agreement_measures_a_grader_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same human labels, graded through the user's template: the prompt sent is the template's."""
    from livemed.models.registry import PROVIDERS
    from tests.cli.test_stage_commands import run

    monkeypatch.setitem(PROVIDERS, "fake", "tests.cli.test_stage_commands:scripted_judge")
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"response": "Take colchicine.", "criterion": "Advises colchicine", "label": True},
        {"response": "", "criterion": "Advises colchicine", "label": False},
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    template = tmp_path / "grader.txt"
    template.write_text("Mine.\n{conversation}\n{response}\n{criterion}\n", encoding="utf-8")
    hashed = parse_template(template.read_text(encoding="utf-8")).hash
    args = ["judges", "agreement", "--labels", str(labels), "--grader", "fake/judge"]
    out = run(tmp_path / "s.db", *args, "--grader-template", str(template))
    assert f"fake/judge@tpl-{hashed}" in out
    assert "macro-F1 1.000" in out
