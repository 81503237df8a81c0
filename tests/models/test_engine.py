"""The engine with in-process fake models: budget, limits, timeouts, backoff, observers."""

from __future__ import annotations

import asyncio
import time

import pytest

from livemed.config import Config, ModelConfig, Price
from livemed.errors import BudgetExceededError
from livemed.models import CallFailure, Completion, Engine, Message, Settings, TransientModelError
from livemed.models.accounting import EngineEvent
from livemed.models.fake import FakeModel
from livemed.models.limits import backoff_delay
from livemed.records import Record, Rejection
from livemed.store import Store

ASK: list[Message] = [
    {"role": "user", "content": "x" * 400}
]  # about 104 prompt tokens by the engine's estimate


def priced(model_id: str, **settings: object) -> Config:
    return Config(
        models={model_id: ModelConfig(**settings)},
        prices={model_id: Price(input=1000.0, output=1000.0)},  # $0.001 per token: easy sums
    )


def completion(tokens: int = 10) -> Completion:
    return Completion(text="done", prompt_tokens=100, completion_tokens=tokens, model="fake/paid")


async def test_max_cost_stops_before_exceeding() -> None:
    model = FakeModel("fake/paid", default=completion())
    engine = Engine(config=priced("fake/paid"), max_cost=0.5)
    # each call costs (100 + 10) tokens = $0.11 and is estimated at (104 + 10) = $0.114
    settings = Settings(max_tokens=10)
    made = 0

    async def spend() -> None:
        nonlocal made
        for i in range(10):
            await engine.generate(model, [{"role": "user", "content": "x" * 400 + str(i)}], settings)
            made += 1

    with pytest.raises(BudgetExceededError, match=r"--max-cost \$0.50"):
        await spend()
    assert made == 4
    assert engine.accounting.cost_usd == pytest.approx(0.44)
    assert engine.accounting.cost_usd <= 0.5
    assert len(model.calls) == 4
    with pytest.raises(BudgetExceededError):  # the stop is final
        await engine.generate(model, [{"role": "user", "content": "tiny"}], settings)


async def test_max_cost_counts_calls_in_flight() -> None:
    model = FakeModel("fake/paid", default=completion(), latency_s=0.05)
    engine = Engine(config=priced("fake/paid"), max_cost=0.35)
    settings = Settings(max_tokens=10)
    calls = [
        engine.generate(model, [{"role": "user", "content": "x" * 400 + str(i)}], settings) for i in range(8)
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert sum(isinstance(r, Completion) for r in results) == 3
    assert sum(isinstance(r, BudgetExceededError) for r in results) == 5
    assert engine.accounting.cost_usd <= 0.35


async def test_cache_hits_are_free_under_a_budget(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    model = FakeModel("fake/paid", default=completion())
    settings = Settings(max_tokens=10)
    async with Engine(store=sqlite_store, config=priced("fake/paid")) as first:
        await first.generate(model, ASK, settings)
    async with Engine(store=sqlite_store, config=priced("fake/paid"), max_cost=0.0) as second:
        out = await second.generate(model, ASK, settings)
    assert isinstance(out, Completion)
    assert out.cached
    assert len(model.calls) == 1


async def test_concurrency_limit() -> None:
    """Three calls in flight, never four: the first calls hold their slot until three are running (a
    wait for that state, not for time), so the limit is reached whatever the machine's load."""
    running = 0
    peak = 0
    three = asyncio.Event()

    async def held(messages: object, settings: object) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 3:
            three.set()
        await asyncio.wait_for(three.wait(), timeout=30)  # a limit below 3 would never let it be set
        running -= 1
        return "ok"

    model = FakeModel("fake/slow", function=held)
    engine = Engine(config=Config(models={"fake/slow": ModelConfig(max_concurrency=3)}))
    replies = await asyncio.gather(
        *(engine.generate(model, [{"role": "user", "content": str(i)}]) for i in range(12))
    )
    assert all(isinstance(r, Completion) for r in replies)
    assert peak == 3


async def test_request_rate_limit() -> None:
    model = FakeModel("fake/rated", default="ok")
    engine = Engine(
        config=Config(models={"fake/rated": ModelConfig(requests_per_minute=600, max_concurrency=64)})
    )
    started = time.monotonic()
    # 600/min bursts 60 then runs at 10/s: 66 calls need about 0.6 s
    await asyncio.gather(*(engine.generate(model, [{"role": "user", "content": str(i)}]) for i in range(66)))
    assert time.monotonic() - started >= 0.45


async def test_token_rate_limit() -> None:
    model = FakeModel("fake/tokens", default="ok")
    config = Config(models={"fake/tokens": ModelConfig(tokens_per_minute=6000, max_concurrency=64)})
    engine = Engine(config=config)
    started = time.monotonic()
    # each call reserves ~104 + 10 tokens; 6000/min bursts 600 (5 calls) then 100 tokens/s
    settings = Settings(max_tokens=10)
    await asyncio.gather(
        *(
            engine.generate(model, [{"role": "user", "content": "x" * 400 + str(i)}], settings)
            for i in range(7)
        )
    )
    assert time.monotonic() - started >= 1.5


async def test_timeout_becomes_a_bounded_failure() -> None:
    model = FakeModel("fake/stuck", default="late", latency_s=5)
    engine = Engine(config=Config(models={"fake/stuck": ModelConfig(timeout_s=0.1, max_retries=1)}))
    engine.backoff_base_s = 0.01
    out = await engine.generate(model, ASK)
    assert isinstance(out, CallFailure)
    assert out.reason == "retries_exhausted"
    assert "no answer within 0.1 s" in out.detail
    assert len(model.calls) == 2  # each attempt cut by the timeout: the model's 5 s reply never came


async def test_transient_then_success_and_fatal_not_model_wide() -> None:
    from livemed.models import FatalModelError

    model = FakeModel(
        "fake/flaky",
        responses=[
            TransientModelError("busy", status=503),
            "first",
            FatalModelError("bad item", status=400),
            "third",
        ],
    )
    engine = Engine()
    engine.backoff_base_s = 0.001
    first = await engine.generate(model, [{"role": "user", "content": "1"}])
    second = await engine.generate(model, [{"role": "user", "content": "2"}])
    third = await engine.generate(model, [{"role": "user", "content": "3"}])
    assert isinstance(first, Completion)
    assert first.text == "first"
    assert isinstance(second, CallFailure)
    assert second.reason == "fatal"
    assert isinstance(third, Completion)  # a per-item 400 does not disable the model


def test_backoff_delay() -> None:
    for _ in range(200):
        waited = backoff_delay(0, retry_after=2.0)
        assert 2.0 <= waited <= 2.2
        assert 0 <= backoff_delay(3, base=0.5) <= 4.0
        assert backoff_delay(10, base=0.5, cap=3.0) <= 3.0
        assert 120.0 <= backoff_delay(0, retry_after=3600, cap=30.0) <= 132.0  # Retry-After has its own cap


async def test_observers_see_every_step_and_cannot_break_calls() -> None:
    model = FakeModel("fake/obs", responses=[TransientModelError("busy"), "fine", "again"])
    engine = Engine()
    engine.backoff_base_s = 0.001
    seen: list[EngineEvent] = []

    def broken(event: EngineEvent) -> None:
        raise RuntimeError("observer bug")

    engine.observers.extend([seen.append, broken])
    out = await engine.generate(model, [{"role": "user", "content": "a"}], stage="screen")
    assert isinstance(out, Completion)
    assert [e.kind for e in seen] == ["retry", "completion"]
    assert seen[0].usage.retries == 1
    assert seen[1].stage == "screen"
    assert seen[1].finishes_call
    assert engine.finished == 1
    assert engine.accounting.by_stage["screen"]["fake/obs"].calls == 2


async def test_unpriced_model_under_a_budget_warns(caplog: pytest.LogCaptureFixture) -> None:
    from livemed.models.base import Completion as C

    class Unpriced(FakeModel):
        @property
        def id(self) -> str:
            return "vllm/unpriced"

    model = Unpriced(default=C(text="x", model="vllm/unpriced"))
    engine = Engine(max_cost=1.0)
    with caplog.at_level("WARNING", logger="livemed.models"):
        await engine.generate(model, ASK)
        await engine.generate(model, [{"role": "user", "content": "b"}])
    assert caplog.text.count("has no price") == 1


def test_one_engine_serves_several_event_loops(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from livemed.store import Store

    async def slow(messages: object, settings: object) -> str:
        await asyncio.sleep(0.005)
        return "ok"

    model = FakeModel("fake/loops", function=slow)
    store = Store(tmp_path / "loops.db")
    engine = Engine(store=store, config=Config(models={"fake/loops": ModelConfig(max_concurrency=2)}))

    async def batch(tag: str) -> list[object]:
        questions = [[{"role": "user", "content": f"{tag} {i}"}] for i in range(6)]
        return await asyncio.gather(*(engine.generate(model, q) for q in questions))  # type: ignore[arg-type]

    first = asyncio.run(batch("a"))  # contends for the semaphore, so it binds to this loop
    second = asyncio.run(batch("b"))  # a new loop: fresh limits (the old semaphore would refuse)
    third = asyncio.run(batch("a"))  # cached answers, read on yet another loop
    assert all(isinstance(r, Completion) for r in first + second + third)
    assert all(r.cached for r in third if isinstance(r, Completion))
    assert len(model.calls) == 12
    engine.flush()
    assert store.cache_count() == 12
    store.close()


async def test_budget_estimates_learn_from_billed_prompt_tokens() -> None:
    # the endpoint bills 3x the prompt tokens of the 4-characters-per-token estimate: $0.322 per call
    def billed(messages: object, settings: object) -> Completion:
        return Completion(text="x", prompt_tokens=312, completion_tokens=10, model="fake/paid")

    model = FakeModel("fake/paid", function=billed)
    engine = Engine(config=priced("fake/paid"), max_cost=1.1)
    settings = Settings(max_tokens=10)

    async def spend() -> None:
        for i in range(10):
            await engine.generate(model, [{"role": "user", "content": "x" * 400 + str(i)}], settings)

    with pytest.raises(BudgetExceededError):
        await spend()
    # without learning, the 4th call would be estimated at $0.114 and taken the total to $1.288
    assert len(model.calls) == 3
    assert engine.accounting.cost_usd <= 1.1


async def test_structured_compliance_is_kept_on_the_run(sqlite_store: Store) -> None:
    from pydantic import BaseModel

    from livemed.models import LLM
    from livemed.pipeline.runs import track_run
    from livemed.records import Run

    class Verdict(BaseModel):
        met: bool

    engine = Engine(store=sqlite_store)
    llm = LLM(engine, FakeModel("fake/j", responses=['{"met": true}', "nope", '{"met": false}', "x", "y"]))
    with track_run(sqlite_store, "grade", engine=engine) as run:
        for prompt in ("a", "b", "c"):
            await llm.structured([{"role": "user", "content": prompt}], Verdict)
    stored = sqlite_store.get(Run, run.id)
    assert stored is not None
    assert stored.compliance == {"fake/j": {"first_try": 1, "repaired": 1, "failed": 1, "total": 3}}


def test_cache_key_changes_with_provider_options() -> None:
    from livemed.config import ModelConfig
    from livemed.models.engine import cache_key
    from livemed.models.openai import openai_model

    def model(extra: dict[str, object]) -> object:
        config = Config(models={"openai/m": ModelConfig(base_url="http://127.0.0.1:9/v1", extra_body=extra)})
        return openai_model("m", config=config)

    messages = [{"role": "user", "content": "hi"}]
    plain = cache_key(model({}), messages, Settings())  # type: ignore[arg-type]
    assert plain == cache_key(model({}), messages, Settings())  # type: ignore[arg-type]
    assert plain != cache_key(model({"reasoning_effort": "high"}), messages, Settings())  # type: ignore[arg-type]


def test_cache_key_is_the_hash_of_the_whole_material_dumped_with_sorted_keys() -> None:
    """The key written part by part is the same sha256 as `json.dumps(material, sort_keys=True,
    ensure_ascii=False)` of the whole (a changed key would make every cached call be paid again)."""
    import hashlib
    import json

    from livemed.config import ModelConfig
    from livemed.models.engine import cache_key
    from livemed.models.openai import openai_model

    schema = {"type": "object", "properties": {"met": {"type": "boolean"}, "é": {"enum": ["ü", 1.5]}}}
    extra = {"reasoning_effort": "high", "chat_template_kwargs": {"z": 1, "a": [None, True]}}
    messages = [
        {"role": "system", "content": 'Grade. \u00e9 "quoted" \n newline'},
        {"role": "user", "content": "Fièvre et toux — 発熱"},
    ]
    for body, settings in (
        ({}, Settings()),
        (extra, Settings(temperature=0.0, max_tokens=64, seed=7, stop=("\n\n",), json_schema=schema)),
        (extra, Settings(n=3, top_p=0.5, sample=2)),
    ):
        config = Config(models={"openai/m": ModelConfig(base_url="http://127.0.0.1:9/v1", extra_body=body)})
        model = openai_model("m", config=config)
        material = {
            "model": model.id,
            "endpoint": model.endpoint,
            "messages": messages,
            "settings": settings.model_dump(mode="json"),
            "extra_body": body,
        }
        whole = json.dumps(material, sort_keys=True, ensure_ascii=False).encode()
        expected = hashlib.sha256(whole).hexdigest()
        assert cache_key(model, messages, settings) == expected  # type: ignore[arg-type]
        assert cache_key(model, messages, settings) == expected  # type: ignore[arg-type]  # settings cached


def test_retry_after_is_honoured_beyond_the_backoff_cap() -> None:
    assert 60.0 <= backoff_delay(0, retry_after=60.0) <= 66.0
    assert backoff_delay(0, retry_after=1000.0) <= 132.0


async def test_a_budget_stop_keeps_every_call_already_paid_for(sqlite_store: Store) -> None:
    from livemed.pipeline.runner import run_stage
    from tests.foundation.factories import doc

    model = FakeModel("fake/paid", default=completion(), latency_s=0.02)
    engine = Engine(config=priced("fake/paid", max_concurrency=2), max_cost=0.5)
    settings = Settings(max_tokens=10)

    async def answer(d: str) -> list[Record]:
        out = await engine.generate(model, [{"role": "user", "content": "x" * 400 + str(d)}], settings)
        assert isinstance(out, Completion)
        return [Rejection(stage="paid", reason="done", record_kind="doc", record_id=str(d))]

    items = [doc(str(i)).id for i in range(20)]  # many more items queued than the budget covers
    with pytest.raises(BudgetExceededError):
        await run_stage(
            sqlite_store, items, answer, output_id=lambda i: f"paid:{i}", output_kinds=["rejection"]
        )
    assert len(model.calls) == 4  # $0.11 each within $0.50, none cancelled half-way
    assert engine.accounting.cost_usd == pytest.approx(0.44)
    assert sqlite_store.count().get("rejection") == 4  # every paid call's result is stored


async def test_generate_structured_validates_and_repairs_once_on_a_fresh_engine() -> None:
    from pydantic import BaseModel

    from livemed.models import generate_structured

    class Verdict(BaseModel):
        criteria_met: bool

    model = FakeModel("fake/judge", responses=["not json", '{"criteria_met": true}'])
    out = await generate_structured(model, [{"role": "user", "content": "a"}], Verdict)
    assert out.value == Verdict(criteria_met=True)
    assert out.repaired
    assert len(model.calls) == 2


async def test_consecutive_failed_requests_stop_a_models_calls(caplog: pytest.LogCaptureFixture) -> None:
    """After `max_consecutive_failures` requests in a row that failed after their retries (one whose
    last answer was a 429 does not count), the model's later calls are not sent; a reply in between
    starts the count again."""
    script: list[str | BaseException] = [
        TransientModelError("HTTP 500", status=500),
        TransientModelError("HTTP 429", status=429),  # the request's last answer: the endpoint answers
        "a reply",
        *(TransientModelError(f"HTTP 500 ({n})", status=500) for n in range(4)),
    ]
    model = FakeModel("fake/dying", responses=script, default="never sent")
    config = Config(models={"fake/dying": ModelConfig(max_retries=1, max_consecutive_failures=2)})
    engine = Engine(config=config)
    engine.backoff_base_s = 0.001
    first = await engine.generate(model, [{"role": "user", "content": "1"}])  # 500, 429: not counted
    assert isinstance(first, CallFailure)
    assert "gave up after 2 attempt(s)" in first.detail
    assert isinstance(await engine.generate(model, [{"role": "user", "content": "2"}]), Completion)
    second = await engine.generate(model, [{"role": "user", "content": "3"}])  # 500, 500: one
    third = await engine.generate(model, [{"role": "user", "content": "4"}])  # 500, 500: two in a row
    later = [await engine.generate(model, [{"role": "user", "content": str(n)}]) for n in range(5, 9)]
    assert len(model.calls) == 7  # nothing sent after the stop
    stop = "stopped after 2 consecutive failures from in-process: HTTP 500 (3)"
    assert isinstance(second, CallFailure)
    assert "gave up after 2 attempt(s)" in second.detail
    assert isinstance(third, CallFailure)
    assert third.detail == stop
    assert third.attempts == 2
    assert all(isinstance(out, CallFailure) and out.detail == stop for out in later)
    assert engine.disabled_models() == {"fake/dying": stop}
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [f"fake/dying: {stop}"]


async def test_a_short_outage_that_retries_ride_out_stops_nothing() -> None:
    """16 requests at once whose first attempts all fail (more failed attempts than the limit): each
    succeeds on its retry, so no request failed and the model is not stopped."""
    errors = [TransientModelError(f"HTTP 503 ({n})", status=503) for n in range(16)]
    model = FakeModel("fake/flaky", responses=[*errors, *(["fine"] * 16)], default="fine")
    settings = ModelConfig(max_retries=2, max_consecutive_failures=5, max_concurrency=16)
    engine = Engine(config=Config(models={"fake/flaky": settings}))
    engine.backoff_base_s = 0.001
    done = await asyncio.gather(
        *(engine.generate(model, [{"role": "user", "content": str(n)}]) for n in range(16))
    )
    assert all(isinstance(out, Completion) for out in done)
    assert engine.disabled_models() == {}
