"""`--grader-setup healthbench`: livemed's grader requests equal those openai/simple-evals' HealthBench
runner sent for the same examples (`tests/fixtures/healthbench/grader_requests.json`, recorded at the
same fake server by `record_grader_requests.py`), and a reply that never parses is unusable."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import ConfigError
from livemed.grade.template import HEALTHBENCH_SYSTEM, healthbench_reply
from livemed.models.fake import FakeModel, Reply
from livemed.records import Grade, GradeFailure, Run, ValidityCard
from livemed.store import Store
from tests.fakes.healthbench_grader import ASKED_TWICE, EXAMPLES, GRADER, RECORDED, responder
from tests.fakes.openai_server import Behavior, FakeOpenAIServer

KEY_ENV = "LIVEMED_HB_SETUP_KEY"
CANDIDATE = "openai/physician"
JUDGE = f"openai/{GRADER}"
CONVERSATION, ITEM, INSTRUCTIONS = "# Conversation\n", "\n\n# Rubric item\n", "\n\n# Instructions"


def recorded() -> list[str]:
    data = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert (data["source"], data["licence"], len(data["commit"])) == ("openai/simple-evals", "MIT", 40)
    requests: list[str] = data["requests"]
    return requests


def template_of(body: dict[str, Any]) -> str:
    """HealthBench's grader template, its placeholders put back where simple-evals filled them."""
    prompt = body["messages"][-1]["content"]
    head, rest = prompt.split(CONVERSATION, 1)
    _, rest = rest.split(ITEM, 1)
    _, tail = rest.split(INSTRUCTIONS, 1)
    return f"{head}{CONVERSATION}<<conversation>>{ITEM}<<rubric_item>>{INSTRUCTIONS}{tail}"


@pytest.fixture
def template(tmp_path: Path) -> Path:
    (text,) = {template_of(json.loads(raw)) for raw in recorded()}  # one template behind every request
    path = tmp_path / "healthbench-grader.txt"
    path.write_text(text, encoding="utf-8")
    return path


def project(folder: Path, url: str, max_retries: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ['store = "livemed.db"']
    for model in (CANDIDATE, JUDGE):
        lines += [f'[models."{model}"]', f'base_url = "{url}"', f'api_key_env = "{KEY_ENV}"']
        lines += ["max_concurrency = 4", f"max_retries = {max_retries}"]
    config = folder / "livemed.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def cli(config: Path, *argv: str, code: int = 0) -> str:
    result = CliRunner(env={KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}).invoke(
        app, ["--config", str(config), *argv]
    )
    assert result.exit_code == code, result.output + repr(result.exception)
    return result.output + str(result.exception)


def grader_requests(server: FakeOpenAIServer) -> list[bytes]:
    return [r.raw for r in server.chat_requests if r.body is not None and r.body["model"] == GRADER]


def canonical(raw: bytes | str) -> str:
    return json.dumps(json.loads(raw), sort_keys=True)


SETUP = ["--judge", JUDGE, "--grader-setup", "healthbench"]
FLOWS = {
    "eval": [["eval", str(EXAMPLES), "-m", CANDIDATE, *SETUP, "--published", "2025-01-01"]],
    "grade": [
        ["import-healthbench", str(EXAMPLES), "--published", "2025-01-01"],
        ["answer", "--model", CANDIDATE],
        ["grade", *SETUP],
    ],
}


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_the_healthbench_setup_sends_the_requests_simple_evals_sends(
    flow: str, tmp_path: Path, template: Path
) -> None:
    with FakeOpenAIServer(responder=responder()) as server:
        config = project(tmp_path, server.base_url)
        for argv in FLOWS[flow]:
            cli(config, *argv, *(["--grader-template", str(template)] if "--judge" in argv else []))
        sent = grader_requests(server)
    theirs = recorded()
    assert len(sent) == len(theirs) == 9  # 8 rubric items; the one whose first reply was no JSON, twice
    assert Counter(map(canonical, sent)) == Counter(map(canonical, theirs))  # equal as JSON values
    first = json.loads(sent[0])
    assert first["messages"][0] == {"role": "system", "content": HEALTHBENCH_SYSTEM}
    assert (first["temperature"], first["max_tokens"], "response_format" in first) == (0.5, 2048, False)
    assert Counter(sent) == Counter(raw.encode("utf-8") for raw in theirs)  # byte for byte
    with Store(tmp_path / "livemed.db") as store:
        grades = list(store.iter(Grade))
        assert list(store.iter(GradeFailure)) == []
        (run,) = [r for r in store.iter(Run) if r.command == flow]
    assert len(grades) == 8
    assert {g.judge for g in grades} == {run.settings["judge"]}
    assert run.settings["judge"].startswith(f"{JUDGE}@tpl-")
    assert run.settings["judge"].endswith("-healthbench")
    assert run.settings["grader_setup"] == "healthbench"
    assert run.settings["grader_template"].startswith("healthbench-grader.txt sha256:")
    settings = grades[0].provenance.settings
    assert (settings["temperature"], settings["max_tokens"], settings["grader_setup"]) == (
        0.5,
        2048,
        "healthbench",
    )
    twice = [g for g in grades if ASKED_TWICE in g.explanation]
    assert [(g.met, g.raw.startswith("```json")) for g in twice] == [(False, True)]  # the reply that parsed


def test_the_default_setup_grades_the_same_template_as_livemed_always_did(
    tmp_path: Path, template: Path
) -> None:
    """Without --grader-setup: one user message, temperature 0, JSON-schema output, another judge id."""
    with FakeOpenAIServer(responder=responder()) as server:
        config = project(tmp_path, server.base_url)
        args = ["eval", str(EXAMPLES), "-m", CANDIDATE, "--judge", JUDGE, "--published", "2025-01-01"]
        cli(config, *args, "--grader-template", str(template))
        sent = [json.loads(raw) for raw in grader_requests(server)]
    assert len(sent) == 9  # the item whose first reply was no JSON: one repair turn, not the same request
    assert Counter(len(body["messages"]) for body in sent) == {1: 8, 3: 1}
    assert [m["role"] for m in sent[0]["messages"]] == ["user"]
    assert (sent[0]["temperature"], "max_tokens" in sent[0], "response_format" in sent[0]) == (0, False, True)
    with Store(tmp_path / "livemed.db") as store:
        judges = {g.judge for g in store.iter(Grade)} | {f.judge for f in store.iter(GradeFailure)}
        (run,) = list(store.iter(Run))
    (judge,) = judges
    assert not judge.endswith("-healthbench")
    assert "grader_setup" not in run.settings


def test_a_reply_that_never_parses_is_unusable_after_max_retries_plus_one(
    tmp_path: Path, template: Path
) -> None:
    with FakeOpenAIServer(default=Behavior(text='{"criteria_met": "yes"}')) as server:
        config = project(tmp_path, server.base_url, max_retries=2)
        cli(config, "import-healthbench", str(EXAMPLES), "--published", "2025-01-01")
        cli(config, "answer", "--model", CANDIDATE)
        out = cli(config, "grade", *SETUP, "--grader-template", str(template), code=1)
        sent = grader_requests(server)
    assert len(sent) == 8 * 3  # eight items, each asked max_retries + 1 = 3 times
    assert Counter(Counter(sent).values()) == {3: 8}  # the same request again each time
    with Store(tmp_path / "livemed.db") as store:
        assert list(store.iter(Grade)) == []  # never "not met"
        failures = list(store.iter(GradeFailure))
    assert len(failures) == 8
    assert {f.reason for f in failures} == {"unparsable"}
    assert {f.raw for f in failures} == {'{"criteria_met": "yes"}'}
    assert "in 3 replies" in failures[0].detail
    assert "8 of 8 verdicts unusable (unparsable 8)" in out
    assert "your --grader-template, with --grader-setup healthbench" in out  # the retry hint names the setup


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ('```json\n{"explanation": "ok", "criteria_met": true}\n```', (True, "ok")),
        ('  {"criteria_met": false}  ', (False, "")),
        ('Here it is:\n```json\n{"criteria_met": true}\n```', None),  # text before the fence
        ('{"criteria_met": 1}', None),
        ('["criteria_met"]', None),
        ("not json", None),
    ],
)
def test_a_reply_parses_as_simple_evals_grade_loop_parses_it(
    text: str, verdict: tuple[bool, str] | None
) -> None:
    assert healthbench_reply(text) == verdict


def test_the_setup_needs_a_healthbench_template(tmp_path: Path) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("Mine.\n{conversation}\n{response}\n{criterion}\n", encoding="utf-8")
    store = str(tmp_path / "s.db")
    for extra, problem in (
        ([], "add --grader-template FILE"),
        (["--grader-template", str(mine)], "needs its <<conversation>> and <<rubric_item>>"),
    ):
        for command in (["grade", *SETUP], ["eval", "-m", CANDIDATE, *SETUP]):
            result = CliRunner().invoke(app, ["--store", store, *command, *extra])
            assert isinstance(result.exception, ConfigError), result.output
            assert problem in str(result.exception)
    result = CliRunner().invoke(
        app, ["--store", store, "grade", "--judge", JUDGE, "--grader-setup", "openai"]
    )
    assert isinstance(result.exception, ConfigError)
    assert "must be one of livemed, healthbench" in str(result.exception)


def healthbench_provider(model_id: str) -> FakeModel:
    """A fake grader that answers HealthBench's prompt as its template asks (met when the item's
    points are positive), under its setup; other prompts (the pair battery's) as the judges' tests do."""
    from tests.judges.helpers import scripted_provider

    others = scripted_provider(model_id).function
    assert others is not None

    def reply(messages: list[Any], settings: Any) -> Reply | Awaitable[Reply]:
        if "# Rubric item" not in messages[-1]["content"]:
            return others(messages, settings)
        assert messages[0] == {"role": "system", "content": HEALTHBENCH_SYSTEM}
        assert (settings.temperature, settings.max_tokens) == (0.5, 2048)
        met = "# Rubric item\n[-" not in messages[-1]["content"]
        return f'```json\n{{"explanation": "scripted", "criteria_met": {json.dumps(met)}}}\n```'

    return FakeModel(model_id, function=reply)


def test_the_card_of_a_grader_under_the_healthbench_setup_names_it(
    tmp_path: Path, shared_data: Path, template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.models.registry import PROVIDERS
    from tests.judges.test_cli import answered_store, run

    monkeypatch.setitem(PROVIDERS, "fake", "tests.grade.test_healthbench_setup:healthbench_provider")
    store = answered_store(tmp_path, shared_data)
    setup = ["--grader-template", str(template), "--grader-setup", "healthbench"]
    run(store, "grade", "--judge", "fake/grader", *setup)
    with Store(store) as s:
        [judge] = {g.judge for g in s.iter(Grade)}
    assert judge.startswith("fake/grader@tpl-")
    assert judge.endswith("-healthbench")
    assert "--grader-template FILE --grader-setup healthbench" in run(store, "scores", "--judge", judge)
    certify = ["judges", "certify", "--grader", "fake/grader", "--data", str(tmp_path / "none")]
    text = run(store, *certify, "--samples", "1", "--cases", "2", *setup)
    assert f"grader {judge} validity card" in text
    assert "healthbench grader setup" in text
    with Store(store) as s:
        (card,) = list(s.iter(ValidityCard))
    assert (card.grader, card.settings["grader_setup"]) == (judge, "healthbench")
    assert card.metrics["rubric"] is not None
