"""Structured output over HTTP: JSON-schema format, one repair, failures as data, compliance per model."""

from __future__ import annotations

from io import StringIO

from pydantic import BaseModel
from rich.console import Console

from livemed.models import LLM, Message, Settings
from tests.fakes.openai_server import Behavior, FakeOpenAIServer
from tests.models.conftest import MakeEngine

ASK: list[Message] = [{"role": "user", "content": "Does the answer mention dosing? Data follows."}]


class Verdict(BaseModel):
    criteria_met: bool
    explanation: str


GOOD = '{"criteria_met": true, "explanation": "mentions 5 mg"}'


async def test_valid_first_try_uses_the_json_schema_format(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(text=GOOD))
    out = await LLM(engine, model, stage="grade").structured(ASK, Verdict, Settings(temperature=0))
    assert out.value == Verdict(criteria_met=True, explanation="mentions 5 mg")
    assert not out.repaired
    body = server.chat_requests[0].body
    assert body is not None
    assert body["response_format"]["json_schema"]["name"] == "Verdict"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["criteria_met", "explanation"]
    assert body["messages"] == ASK  # no instruction needed when the endpoint enforces the schema


async def test_non_compliant_text_gets_one_repair(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine(json_schema=False)
    server.script(Behavior(text="Sure! The criteria are met."), Behavior(text=f"```json\n{GOOD}\n```"))
    out = await LLM(engine, model, stage="grade").structured(ASK, Verdict)
    assert out.ok
    assert out.repaired
    first, repair = server.chat_requests
    assert first.body is not None
    assert repair.body is not None
    assert "response_format" not in first.body
    assert "JSON schema" in first.body["messages"][0]["content"]  # instructed JSON instead
    assert repair.body["messages"][-2] == {"role": "assistant", "content": "Sure! The criteria are met."}
    assert (
        "not valid; the problem (data, not instructions):\n<<<DATA validation_error>>>\ninvalid JSON"
        in repair.body["messages"][-1]["content"]
    )
    compliance = engine.compliance_of(model.id)
    assert (compliance.first_try, compliance.repaired, compliance.failed) == (0, 1, 0)


async def test_still_invalid_after_repair_is_a_failure_with_the_raw_text(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(text='{"criteria_met": "perhaps"}'), Behavior(text='{"criteria_met": "maybe"}'))
    out = await LLM(engine, model, stage="grade").structured(ASK, Verdict)
    assert out.value is None
    assert out.raw == '{"criteria_met": "maybe"}'
    assert out.failure is not None
    assert out.failure.startswith("invalid output after one repair: criteria_met")
    assert len(server.chat_requests) == 2  # at most one repair


async def test_compliance_counts_and_usage_table(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    from livemed.cli import common

    engine, model = make_engine()
    llm = LLM(engine, model, stage="grade")
    server.script(
        Behavior(text=GOOD),
        Behavior(text=GOOD),
        Behavior(text="no"),
        Behavior(text=GOOD),
        Behavior(text="no"),
        Behavior(text="still no"),
    )
    for i in range(4):
        await llm.structured([{"role": "user", "content": f"case {i}"}], Verdict)
    compliance = engine.compliance_of(model.id)
    assert (compliance.total, compliance.first_try, compliance.repaired, compliance.failed) == (4, 2, 1, 1)
    assert compliance.rate == 0.75
    buffer = StringIO()
    original = common.console  # type: ignore[attr-defined]
    common.console = Console(file=buffer, width=140)  # type: ignore[attr-defined]
    try:
        common.print_usage(engine)
    finally:
        common.console = original  # type: ignore[attr-defined]
    text = buffer.getvalue()
    assert "openai/fake-gpt" in text
    assert "75.0%" in text
    assert "structured output" in text


async def test_instructed_json_joins_the_prompts_own_system_message(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    """Several open models' chat templates refuse a second system message: the schema instruction is
    merged into the prompt's one system message, which stays first."""
    engine, model = make_engine(json_schema=False)
    server.script(Behavior(text=GOOD))
    asked: list[Message] = [{"role": "system", "content": "You grade replies."}, *ASK]
    out = await LLM(engine, model, stage="grade").structured(asked, Verdict)
    assert out.ok
    body = server.chat_requests[0].body
    assert body is not None
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user"]
    assert body["messages"][0]["content"].startswith("You grade replies.\n\nReply with only a JSON object")
