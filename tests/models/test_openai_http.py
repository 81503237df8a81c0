"""The real `openai` client path against a fake OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from livemed.config import Config, ModelConfig
from livemed.models import CallFailure, Completion, Message, Settings, get_model
from livemed.models.openai import OpenAICompatibleModel, parse_retry_after, response_format
from tests.fakes.openai_server import Behavior, FakeOpenAIServer
from tests.models.conftest import KEY_ENV, MakeEngine

HELLO: list[Message] = [{"role": "user", "content": "Say hello."}]


async def test_completion_fields_and_request_body(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(text="Hello there", finish_reason="length", prompt_tokens=7, completion_tokens=2))
    settings = Settings(temperature=0.3, max_tokens=20, seed=5, stop=("END",), top_p=0.9)
    out = await engine.generate(model, HELLO, settings)
    assert isinstance(out, Completion)
    assert (out.text, out.finish_reason, out.prompt_tokens, out.completion_tokens) == (
        "Hello there",
        "length",
        7,
        2,
    )
    assert out.model == "openai/fake-gpt"
    assert out.raw["id"] == "chatcmpl-fake"
    assert out.latency_s > 0
    request = server.chat_requests[0]
    assert request.headers["authorization"] == f"Bearer {api_key}"
    assert request.headers["content-type"].startswith("application/json")
    body = request.body
    assert body is not None
    assert body["model"] == "fake-gpt"
    assert body["messages"] == HELLO
    assert (body["temperature"], body["max_tokens"], body["seed"], body["stop"], body["top_p"]) == (
        0.3,
        20,
        5,
        ["END"],
        0.9,
    )
    assert "n" not in body
    assert "response_format" not in body


async def test_a_request_body_with_any_text_arrives_as_the_same_json_value(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    """The body is sent as compact UTF-8 JSON (orjson): the server reads the very messages and schema."""
    engine, model = make_engine()
    server.script(Behavior(text="ok"))
    messages: list[Message] = [
        {"role": "user", "content": 'Fièvre — 発熱 "quoted" \\ back\nslash \u2028 end'}
    ]
    schema = {"type": "object", "properties": {"é": {"type": "boolean"}}, "required": ["é"]}
    await engine.generate(model, messages, Settings(temperature=0.0, json_schema=schema))
    body = server.chat_requests[0].body
    assert body is not None
    assert body["messages"] == messages
    assert body["response_format"] == response_format(schema)
    assert body["temperature"] == 0.0


async def test_a_reply_orjson_cannot_read_exactly_is_read_by_pythons_json(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    """Replies are decoded with orjson only where it reads them as Python's json would: a reply with
    NaN (orjson refuses it) or an integer past 64 bits (orjson would make it a float) is read as before."""
    engine, model = make_engine()
    reply = (
        '{"id": "chatcmpl-x", "object": "chat.completion", "created": 123456789012345678901234, '
        '"model": "fake-gpt", "choices": [{"index": 0, "finish_reason": "stop", "logprobs": NaN, '
        '"message": {"role": "assistant", "content": "Fièvre: rest."}}], '
        '"usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}'
    )
    server.script(Behavior(body_text=reply))
    out = await engine.generate(model, HELLO, Settings())
    assert isinstance(out, Completion)
    assert out.text == "Fièvre: rest."
    assert out.raw["created"] == 123456789012345678901234
    assert isinstance(out.raw["created"], int)


async def test_n_choices(make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str) -> None:
    engine, model = make_engine()
    server.script(Behavior(text="pick"))
    out = await engine.generate(model, HELLO, Settings(n=3))
    assert isinstance(out, Completion)
    assert out.choices == ["pick", "pick #1", "pick #2"]
    assert out.text == "pick"
    assert server.chat_requests[0].body["n"] == 3  # type: ignore[index]


async def test_json_schema_response_format_sent_when_supported(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    schema = {"name": "Verdict[x]", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}
    await engine.generate(model, HELLO, Settings(json_schema=schema))
    sent = server.chat_requests[0].body["response_format"]  # type: ignore[index]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Verdict_x_"
    assert sent["json_schema"]["schema"] == schema["schema"]


async def test_json_schema_can_be_switched_off(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine(json_schema=False)
    assert not model.supports_json_schema
    await engine.generate(model, HELLO, Settings(json_schema={"name": "X", "schema": {"type": "object"}}))
    assert "response_format" not in server.chat_requests[0].body  # type: ignore[operator]


async def test_extra_body_is_merged(make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str) -> None:
    engine, model = make_engine(extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}})
    await engine.generate(model, HELLO)
    body = server.chat_requests[0].body
    assert body is not None
    assert body["top_k"] == 20
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


async def test_vllm_preset_needs_no_key(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from livemed.models import Engine

    config = Config(models={"vllm/Qwen/Qwen2.5-7B": ModelConfig(base_url=server.base_url + "/")})
    model = get_model("vllm/Qwen/Qwen2.5-7B", config=config)
    assert model.endpoint == server.base_url
    async with Engine(config=config) as engine:
        out = await engine.generate(model, HELLO, Settings(max_tokens=5))
    assert isinstance(out, Completion)
    request = server.chat_requests[0]
    assert request.headers["authorization"] == "Bearer EMPTY"
    assert request.body is not None
    assert request.body["model"] == "Qwen/Qwen2.5-7B"
    assert request.body["max_tokens"] == 5


def test_presets_and_official_max_tokens_field() -> None:
    assert get_model("vllm/m").endpoint == "http://localhost:8000/v1"
    assert get_model("ollama/llama3.2").endpoint == "http://localhost:11434/v1"
    official = get_model("openai/gpt-4o-mini")
    assert official.endpoint == "https://api.openai.com/v1"
    assert isinstance(official, OpenAICompatibleModel)
    assert official.api_key_env == "OPENAI_API_KEY"
    assert official.request_body([], Settings(max_tokens=9))["max_completion_tokens"] == 9


def test_response_format_accepts_a_bare_schema() -> None:
    made = response_format({"title": "My Schema", "type": "object"})
    assert made["json_schema"]["name"] == "My_Schema"
    assert made["json_schema"]["schema"]["type"] == "object"


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = parse_retry_after({"retry-after": later})
    assert seconds is not None
    assert 25 < seconds <= 30


async def test_429_retry_after_is_honoured(
    make_engine: MakeEngine,
    server: FakeOpenAIServer,
    api_key: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine, model = make_engine()
    server.script(Behavior(status=429, retry_after=0.4), Behavior(text="after the wait"))
    with caplog.at_level(logging.DEBUG, logger="livemed.models"):
        out = await engine.generate(model, HELLO)
    assert isinstance(out, Completion)
    assert out.text == "after the wait"
    first, second = server.chat_requests
    assert second.received_at - first.received_at >= 0.4
    delays = [float(m) for m in re.findall(r"retrying in (\d+\.\d+) s", caplog.text)]
    assert len(delays) == 1
    assert (
        0.4 <= delays[0] <= 0.44
    )  # the server's 0.4 s (+ at most 10 % jitter), no exponential backoff on top
    usage = engine.accounting.by_model[model.id]
    assert (usage.calls, usage.retries, usage.failures) == (2, 1, 0)


async def test_retry_after_ms_is_honoured(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(status=429, retry_after_ms=300), Behavior(text="ok"))
    out = await engine.generate(model, HELLO)
    assert isinstance(out, Completion)
    first, second = server.chat_requests
    assert second.received_at - first.received_at >= 0.3


async def test_retries_are_bounded(make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str) -> None:
    engine, model = make_engine(max_retries=3)
    server.default = Behavior(status=500, error_message="the answer is 42")
    out = await engine.generate(model, HELLO)
    assert isinstance(out, CallFailure)
    assert out.reason == "retries_exhausted"
    assert (out.attempts, out.status) == (4, 500)
    assert len(server.chat_requests) == 4  # the client's own retries are off: exactly 1 + max_retries
    usage = engine.accounting.by_model[model.id]
    assert (usage.calls, usage.retries, usage.failures) == (4, 3, 1)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_fatal_errors_are_not_retried(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str, status: int
) -> None:
    engine, model = make_engine(max_retries=3)
    server.script(Behavior(status=status, error_message="nope"))
    out = await engine.generate(model, HELLO)
    assert isinstance(out, CallFailure)
    assert (out.reason, out.status, out.attempts) == ("fatal", status, 1)
    assert f"HTTP {status}" in out.detail
    assert ("nope" in out.detail) == (status in (400, 404))  # the server's reason, except for key refusals
    assert len(server.chat_requests) == 1


async def test_model_wide_errors_stop_later_calls_but_400_does_not(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(status=400, error_message="context too long"))
    assert isinstance(await engine.generate(model, HELLO), CallFailure)
    assert isinstance(await engine.generate(model, [{"role": "user", "content": "short"}]), Completion)
    server.script(Behavior(status=401))
    refused = await engine.generate(model, [{"role": "user", "content": "a"}])
    assert isinstance(refused, CallFailure)
    assert f"${KEY_ENV}" in refused.detail
    before = len(server.chat_requests)
    later = await engine.generate(model, [{"role": "user", "content": "b"}])
    assert isinstance(later, CallFailure)
    assert later.reason == "fatal"
    assert "not sent" in later.detail
    assert len(server.chat_requests) == before
    assert list(engine.disabled_models()) == [model.id]


async def test_missing_key_names_the_variable_and_sends_nothing(
    make_engine: MakeEngine,
    server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    engine, model = make_engine()
    with caplog.at_level(logging.WARNING, logger="livemed.models"):
        out = await engine.generate(model, HELLO)
        later = await engine.generate(model, [{"role": "user", "content": "again"}])
    assert isinstance(out, CallFailure)
    assert isinstance(later, CallFailure)
    assert out.reason == "fatal"
    assert KEY_ENV in out.detail
    assert "not set" in out.detail
    assert server.chat_requests == []
    assert (out.attempts, later.attempts) == (0, 0)  # nothing was sent, nothing attempted
    usage = engine.accounting.by_model[model.id]
    assert (usage.calls, usage.failures) == (0, 2)  # no call is claimed
    assert caplog.records == []  # the command's failure line says it, once


async def test_hang_times_out_and_is_retried(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine(timeout_s=0.3, max_retries=1)
    server.default = Behavior(hang=True)
    started = time.monotonic()
    out = await engine.generate(model, HELLO)
    elapsed = time.monotonic() - started
    assert isinstance(out, CallFailure)  # it returned: the hanging attempts were cut, not waited out
    assert out.reason == "retries_exhausted"
    assert out.attempts == 2
    assert len(server.chat_requests) == 2
    assert elapsed >= 0.6  # each attempt waited its 0.3 s timeout


async def test_malformed_body_is_retried(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(Behavior(malformed=True), Behavior(text="whole"))
    out = await engine.generate(model, HELLO)
    assert isinstance(out, Completion)
    assert out.text == "whole"
    assert len(server.chat_requests) == 2


async def test_unreachable_endpoint_is_a_bounded_failure(api_key: str) -> None:
    from livemed.models import Engine

    with FakeOpenAIServer() as gone:
        base_url = gone.base_url  # the port is free again once the server stops
    config = Config(models={"openai/x": ModelConfig(base_url=base_url, api_key_env=KEY_ENV, max_retries=1)})
    model = get_model("openai/x", config=config)
    async with Engine(config=config) as engine:
        engine.backoff_base_s = 0.01
        out = await engine.generate(model, HELLO)
    assert isinstance(out, CallFailure)
    assert out.reason == "retries_exhausted"
    assert "cannot reach" in out.detail


async def test_a_failure_never_becomes_answer_text(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    from livemed.models import LLM

    engine, model = make_engine(max_retries=0)
    server.default = Behavior(status=500, error_message='{"criteria_met": true, "explanation": "looks fine"}')
    llm = LLM(engine, model, stage="grade")
    out = await llm.generate(HELLO)
    assert isinstance(out, CallFailure)
    assert not hasattr(out, "text")
    from pydantic import BaseModel

    class Verdict(BaseModel):
        criteria_met: bool
        explanation: str

    structured = await llm.structured(HELLO, Verdict)
    assert structured.value is None
    assert structured.raw == ""
    assert structured.call_failure is not None
    assert structured.failure is not None
    assert structured.failure.startswith("call failed")


def test_a_forgotten_client_is_closed_when_the_loop_ends(server: FakeOpenAIServer, api_key: str) -> None:
    from livemed.models import Engine

    config = Config(models={"openai/fake-gpt": ModelConfig(base_url=server.base_url, api_key_env=KEY_ENV)})
    model = get_model("openai/fake-gpt", config=config)
    assert isinstance(model, OpenAICompatibleModel)
    clients = []

    async def forgetful() -> None:
        out = await Engine(config=config).generate(model, HELLO)  # and never aclose()
        assert isinstance(out, Completion)
        clients.append(model._client)

    asyncio.run(forgetful())
    asyncio.run(forgetful())  # a second loop gets its own client
    assert len(clients) == 2
    assert clients[0] is not clients[1]
    assert all(client is not None and client.is_closed() for client in clients)


async def test_fake_server_speaks_the_models_endpoint(server: FakeOpenAIServer, api_key: str) -> None:
    import openai

    async with openai.AsyncOpenAI(api_key=api_key, base_url=server.base_url, max_retries=0) as client:
        page = await client.models.list()
    assert [m.id for m in page.data] == ["fake-gpt"]
    assert server.requests[-1].path == "/v1/models"


def test_unknown_provider_suggests_the_right_one() -> None:
    from livemed.errors import ConfigError, UnknownNameError

    with pytest.raises(UnknownNameError, match="did you mean 'openai'"):
        get_model("opneai/gpt-4o")
    with pytest.raises(ConfigError, match="provider/name"):
        get_model("gpt-4o")


async def test_an_endpoint_that_refuses_the_schema_format_gets_instructed_json(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    from pydantic import BaseModel

    from livemed.models import LLM

    class Verdict(BaseModel):
        criteria_met: bool

    engine, model = make_engine(max_retries=0)
    refusal = "response_format type 'json_schema' is not supported by this server"
    server.script(
        Behavior(status=400, error_message=refusal),
        Behavior(text='{"criteria_met": true}'),
        Behavior(text='{"criteria_met": false}'),
    )
    llm = LLM(engine, model, stage="grade")
    first = await llm.structured([{"role": "user", "content": "a"}], Verdict)
    second = await llm.structured([{"role": "user", "content": "b"}], Verdict)
    assert (first.value, second.value) == (Verdict(criteria_met=True), Verdict(criteria_met=False))
    refused, retried, later = (r.body or {} for r in server.chat_requests)
    assert "response_format" in refused
    for body in (retried, later):  # instructed JSON, straight away for the later call
        assert "response_format" not in body
        assert "JSON schema" in body["messages"][0]["content"]
    assert engine.schema_refused == {model.id}


async def test_any_other_400_is_a_plain_failure(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    from pydantic import BaseModel

    from livemed.models import LLM

    class Verdict(BaseModel):
        criteria_met: bool

    engine, model = make_engine(max_retries=0)
    server.default = Behavior(status=400, error_message="maximum context length is 8192 tokens")
    out = await LLM(engine, model).structured([{"role": "user", "content": "a"}], Verdict)
    assert out.value is None
    assert len(server.chat_requests) == 1
    assert engine.schema_refused == set()


async def test_a_concurrency_limit_narrows_the_window_instead_of_refusing_every_retry(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    """An endpoint that takes 4 requests at once and answers the rest 429: the model's window halves
    when most of it is refused, so the calls settle near what is taken and every one is answered; sent
    all at once at 16 in flight and retried into the same crowd, most retries would be refused."""
    server.max_concurrent, server.random_retry_after = 4, 0.01
    server.default = Behavior(latency=0.1)
    engine, model = make_engine(max_concurrency=16, max_retries=6)
    calls = 60
    out = await asyncio.gather(
        *(engine.generate(model, [{"role": "user", "content": f"call {i}"}]) for i in range(calls))
    )
    assert all(isinstance(o, Completion) for o in out)
    window = engine.window_of(model)
    assert window.ceiling == 16
    assert window.smallest < 16  # the first 16 sent at once, 12 refused: cut at the ninth
    assert 0 < server.refused < calls  # a fixed window of 16: 372-376 refused, 48-52 failed
    usage = engine.accounting.by_model[model.id]
    assert (usage.retries, usage.failures) == (server.refused, 0)
