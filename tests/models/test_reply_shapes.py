"""Reply shapes recorded from real servers (`tests/fixtures/replies/`), over HTTP, through the engine."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import pytest

from livemed.models import CallFailure, Completion, Engine, Message, Settings
from livemed.models.limits import estimate_tokens
from livemed.models.openai import OpenAICompatibleModel
from livemed.models.statuses import retry_after_from_body
from livemed.models.structured import extract_json
from livemed.store import Store
from tests.fakes.openai_server import FIXTURES, FakeOpenAIServer, recorded, recorded_shapes

MakeEngine = Callable[..., tuple[Engine, OpenAICompatibleModel]]
MESSAGES: list[Message] = [{"role": "user", "content": "Does the reply advise colchicine? Reply in JSON."}]
VERDICT = {"explanation": "The response advises colchicine at a kidney-adjusted dose.", "criteria_met": True}

# shape -> (failure reason or None for a completion, requests for one call with max_retries=2, detail cue)
EXPECTED: dict[str, tuple[str | None, int, str]] = {
    "vllm_normal": (None, 1, ""),
    "vllm_reasoning_content": (None, 1, ""),
    "r1_think_in_content": (None, 1, ""),
    "ollama_v1": (None, 1, ""),
    "llamacpp_no_usage": (None, 1, ""),
    "openrouter_finish_error": ("provider_error", 3, "Upstream provider error: connection reset"),
    "openrouter_402": ("fatal", 1, "insufficient credits (402): Insufficient credits."),
    "http200_error_body": ("provider_error", 1, "Provider returned error (code 400)"),
    "ratelimit_429_body": ("retries_exhausted", 3, "Please try again in 300ms"),
    "tool_calls_only": ("no_text", 1, "only tool calls"),
    "length_content_null": ("truncated", 1, "ran out of tokens before any text (finish_reason length)"),
    "truncated_body": ("retries_exhausted", 3, "malformed/truncated response body from http://127.0.0.1"),
}


def test_every_recorded_shape_has_an_expectation_and_a_source() -> None:
    assert sorted(EXPECTED) == recorded_shapes()
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    for name in EXPECTED:
        assert f"`{name}.json`" in readme


@pytest.mark.parametrize("shape", sorted(EXPECTED))
async def test_each_shape_is_a_completion_with_text_or_a_failure_that_is_never_cached(
    shape: str, server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str, sqlite_store: Store
) -> None:
    server.default = recorded(shape)
    engine, model = make_engine(store=sqlite_store)
    reason, requests, cue = EXPECTED[shape]
    result = await engine.generate(model, MESSAGES, Settings(temperature=0))
    engine.flush()
    assert len(server.chat_requests) == requests
    if reason is None:
        assert isinstance(result, Completion)
        assert json.loads(result.text) == VERDICT  # no reasoning, no think block, nothing around it
        assert sqlite_store.cache_count() == 1
        return
    assert isinstance(result, CallFailure)
    assert result.reason == reason
    assert cue in result.detail
    assert "cannot reach" not in result.detail
    assert api_key not in result.detail
    assert sqlite_store.cache_count() == 0  # nothing cached: the next run asks again
    again = await engine.generate(model, MESSAGES, Settings(temperature=0))
    assert isinstance(again, CallFailure)
    if shape != "openrouter_402":  # model-wide: the next call is not sent
        assert len(server.chat_requests) == 2 * requests


async def test_reasoning_fields_and_think_blocks_are_kept_out_of_text_and_in_the_raw_record(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(recorded("vllm_reasoning_content"), recorded("r1_think_in_content"))
    fielded = await engine.generate(model, MESSAGES)
    inline = await engine.generate(model, [*MESSAGES, {"role": "user", "content": "again"}])
    assert isinstance(fielded, Completion)
    assert isinstance(inline, Completion)
    assert fielded.reasoning.startswith("The grader wants")
    assert inline.reasoning.startswith("The rubric item")
    for completion in (fielded, inline):
        assert 'criteria_met": false' not in completion.text
        assert 'criteria_met": false' in str(completion.raw)  # the raw body keeps it all


def test_json_extraction_never_starts_inside_a_think_block() -> None:
    text = '<think>maybe {"criteria_met": false} is it</think>\n{"criteria_met": true}'
    assert json.loads(extract_json(text)) == {"criteria_met": True}
    unclosed = '<think>I will answer {"criteria_met": false'
    assert "criteria_met" not in extract_json(unclosed)


async def test_a_reply_with_text_cut_off_by_length_stays_a_completion_with_its_finish_reason(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    server.script(recorded("length_content_null"))
    server.default = server.default.__class__(text="partial answer", finish_reason="length")
    first = await engine.generate(model, MESSAGES)
    second = await engine.generate(model, MESSAGES)
    assert isinstance(first, CallFailure)
    assert first.reason == "truncated"
    assert isinstance(second, Completion)
    assert (second.text, second.finish_reason) == ("partial answer", "length")


async def test_missing_usage_is_estimated_marked_and_priced(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    server.default = recorded("llamacpp_no_usage")
    completion = await engine.generate(model, MESSAGES)
    assert isinstance(completion, Completion)
    assert completion.usage_estimated
    assert completion.prompt_tokens == estimate_tokens(MESSAGES)
    assert completion.completion_tokens >= len(completion.text) // 4
    usage = engine.accounting.by_model[model.id]
    assert usage.estimated_calls == 1
    assert usage.cost_usd > 0  # priced at 1 / 2 $ per Mtok in the test config: never $0


async def test_a_truncated_reply_without_text_is_still_billed(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    server.default = recorded("length_content_null")
    await engine.generate(model, MESSAGES)
    usage = engine.accounting.by_model[model.id]
    assert (usage.calls, usage.failures, usage.completion_tokens) == (1, 1, 1024)
    assert usage.cost_usd == pytest.approx((405 * 1 + 1024 * 2) / 1e6)


async def test_402_disables_the_model_and_says_credits(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    server.default = recorded("openrouter_402")
    first = await engine.generate(model, MESSAGES)
    second = await engine.generate(model, [{"role": "user", "content": "another"}])
    assert isinstance(first, CallFailure)
    assert isinstance(second, CallFailure)
    assert first.status == 402
    assert "credits" in second.detail
    assert len(server.chat_requests) == 1
    assert model.id in engine.disabled_models()


async def test_a_429_that_states_its_wait_only_in_the_body_is_waited_for(
    server: FakeOpenAIServer,
    make_engine: MakeEngine,
    api_key: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine, model = make_engine()
    server.script(recorded("ratelimit_429_body"), recorded("vllm_normal"))
    with caplog.at_level(logging.DEBUG, logger="livemed.models"):
        result = await engine.generate(model, MESSAGES)
    assert isinstance(result, Completion)
    delays = [float(m) for m in re.findall(r"retrying in (\d+\.\d+) s", caplog.text)]
    assert len(delays) == 1
    assert 0.3 <= delays[0] <= 0.34  # the body's 300 ms (+ at most 10 % jitter), not the 0.01 s backoff


@pytest.mark.parametrize(
    ("body", "seconds"),
    [
        ({"error": {"message": "Please try again in 20s."}}, 20.0),
        ({"error": {"message": "Rate limit reached. Please try again in 1m30s."}}, 90.0),
        ({"error": {"code": 429, "metadata": {"retry_after": 7}}}, 7.0),
        ({"error": {"code": 429, "details": [{"@type": "RetryInfo", "retryDelay": "12s"}]}}, 12.0),
        ({"retry_after": 3}, 3.0),
        ({"error": {"message": "slow down"}}, None),
    ],
)
def test_waits_stated_in_429_bodies(body: dict[str, Any], seconds: float | None) -> None:
    assert retry_after_from_body(body) == seconds


def test_an_openrouter_reset_header_in_the_body_is_a_wait() -> None:
    import time

    reset_ms = (time.time() + 30) * 1000
    body = {"error": {"code": 429, "metadata": {"headers": {"X-RateLimit-Reset": str(int(reset_ms))}}}}
    wait = retry_after_from_body(body)
    assert wait is not None
    assert 25 < wait <= 30


async def test_a_200_error_body_with_a_rate_limit_code_is_retried(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    busy = json.loads((FIXTURES / "http200_error_body.json").read_text())["body"]
    busy["error"] = {"message": "Provider is overloaded", "code": 429}
    server.script(server.default.__class__(body=busy), recorded("ollama_v1"))
    result = await engine.generate(model, MESSAGES)
    assert isinstance(result, Completion)
    assert len(server.chat_requests) == 2


async def test_an_empty_reply_from_any_model_is_no_text_not_an_answer() -> None:
    from livemed.models.fake import FakeModel

    model = FakeModel(
        "fake/blank", responses=["", "   ", Completion(text="", finish_reason="length", model="fake/blank")]
    )
    async with Engine() as engine:
        results = [await engine.generate(model, [{"role": "user", "content": str(i)}]) for i in range(3)]
    assert [r.reason if isinstance(r, CallFailure) else "answer" for r in results] == [
        "no_text",
        "no_text",
        "truncated",
    ]


async def test_a_provider_message_that_echoes_the_key_is_scrubbed(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str
) -> None:
    engine, model = make_engine()
    echoed = {"error": {"message": f"bad key {api_key} for this org", "code": 400}}
    mid_reply = {"choices": [{"finish_reason": "error", "error": {"message": f"upstream saw {api_key}"}}]}
    server.script(
        server.default.__class__(body=echoed),
        *[server.default.__class__(body=mid_reply)] * 3,
    )
    first = await engine.generate(model, MESSAGES)
    second = await engine.generate(model, [{"role": "user", "content": "again"}])
    for failure in (first, second):
        assert isinstance(failure, CallFailure)
        assert api_key not in failure.detail
        assert "[redacted]" in failure.detail


async def test_a_completion_that_echoes_the_key_escaped_or_plain_is_refused_not_rewritten(
    server: FakeOpenAIServer, make_engine: MakeEngine, api_key: str, sqlite_store: Store
) -> None:
    engine, model = make_engine(store=sqlite_store)
    escaped = "".join(f"\\u{ord(c):04x}" for c in api_key)  # JSON may write any character so
    shape = '{"choices": [{"message": {"role": "assistant", "content": "your key is KEY"}, '
    shape += '"finish_reason": "stop"}]}'
    bodies = [shape.replace("KEY", text) for text in (api_key, escaped)]
    server.script(*[server.default.__class__(body_text=body) for body in bodies])
    for n in range(2):
        failure = await engine.generate(model, [{"role": "user", "content": f"echo {n}"}])
        assert isinstance(failure, CallFailure)
        assert "holds the API key" in failure.detail
        assert api_key not in failure.detail
    await engine.aclose()
    assert sqlite_store.cache_count() == 0


def test_runs_stored_before_estimated_usage_still_read() -> None:
    from livemed.records import Run

    old = {"run_id": "abc", "command": "answer", "usage": {"openai/x": {"calls": 2, "prompt_tokens": 9}}}
    run = Run.model_validate(old)
    assert (run.usage["openai/x"].calls, run.usage["openai/x"].estimated_calls) == (2, 0)


def test_the_json_schema_of_a_type_is_built_once() -> None:
    from livemed.grade.grader import Verdict
    from livemed.models.structured import json_schema_of, prepare

    model = OpenAICompatibleModel("vllm", "m")
    first = prepare(model, [], Verdict, Settings())[1].json_schema
    second = prepare(model, [], Verdict, Settings())[1].json_schema
    assert first is not None
    assert second is not None
    assert first["schema"] is second["schema"] is json_schema_of(Verdict)
    assert first["schema"] == Verdict.model_json_schema()
