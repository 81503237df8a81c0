"""The response cache (hits cost no HTTP request, read-only, write-behind) and the API key's confinement."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from livemed.models import LLM, CallFailure, Completion, Engine, Message, Settings
from livemed.models.cache import ResponseCache
from livemed.models.fake import FakeModel
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer
from tests.models.conftest import KEY_ENV, MakeEngine

HELLO: list[Message] = [{"role": "user", "content": "Say hello."}]


async def test_cache_hit_makes_no_http_request(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str, sqlite_store: Store
) -> None:
    engine, model = make_engine(store=sqlite_store)
    server.script(Behavior(text="first answer"))
    first = await engine.generate(model, HELLO, Settings(temperature=0))
    [(_, buffered)] = engine.cache._pending.values()
    assert buffered == first.model_dump_json()  # a paid reply waits as its JSON text, made once
    again = await engine.generate(model, HELLO, Settings(temperature=0))
    assert isinstance(first, Completion)
    assert isinstance(again, Completion)
    assert (first.cached, again.cached) == (False, True)
    assert again.text == "first answer"
    assert len(server.chat_requests) == 1
    await engine.aclose()
    later, model2 = make_engine(store=sqlite_store)  # a new run over the same store
    replay = await later.generate(model2, HELLO, Settings(temperature=0))
    assert isinstance(replay, Completion)
    assert replay.cached
    assert replay.model_dump(exclude={"cached"}) == first.model_dump(exclude={"cached"})
    assert len(server.chat_requests) == 1
    assert later.accounting.by_model[model.id].cache_hits == 1
    assert later.accounting.by_model[model.id].calls == 0


async def test_every_setting_and_the_sample_index_are_in_the_key(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str, sqlite_store: Store
) -> None:
    engine, model = make_engine(store=sqlite_store)
    variants = [
        Settings(),
        Settings(temperature=0.5),
        Settings(sample=1),
        Settings(max_tokens=3),
        Settings(seed=1),
    ]
    for settings in variants:
        await engine.generate(model, HELLO, settings)
    assert len(server.chat_requests) == len(variants)


async def test_cache_off_and_read_only(
    make_engine: MakeEngine,
    server: FakeOpenAIServer,
    api_key: str,
    sqlite_store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    off, model = make_engine(store=sqlite_store, cache="off")
    await off.generate(model, HELLO)
    await off.generate(model, HELLO)
    assert len(server.chat_requests) == 2
    assert sqlite_store.cache_count() == 0
    writer, _ = make_engine(store=sqlite_store)
    await writer.generate(model, HELLO)
    await writer.aclose()
    assert len(server.chat_requests) == 3
    monkeypatch.delenv(KEY_ENV)  # replaying the cache needs no key
    reader, fresh = make_engine(store=sqlite_store, cache="read-only")
    hit = await reader.generate(fresh, HELLO)
    miss = await reader.generate(fresh, [{"role": "user", "content": "never asked"}])
    assert isinstance(hit, Completion)
    assert hit.cached
    assert isinstance(miss, CallFailure)
    assert miss.reason == "cache_miss"
    assert len(server.chat_requests) == 3  # read-only never calls the endpoint


async def test_concurrent_lookups_share_one_query(sqlite_store: Store) -> None:
    model = FakeModel("fake/batch", function=lambda messages, settings: messages[-1]["content"].upper())
    questions = [[{"role": "user", "content": f"q{i}"}] for i in range(50)]
    async with Engine(store=sqlite_store) as first:
        await asyncio.gather(*(first.generate(model, q) for q in questions))  # type: ignore[arg-type]
    assert sqlite_store.cache_count() == 50
    async with Engine(store=sqlite_store) as second:
        answers = await asyncio.gather(*(second.generate(model, q) for q in questions))  # type: ignore[arg-type]
        assert second.cache.reads == 1
    assert [a.text for a in answers if isinstance(a, Completion)] == [f"Q{i}" for i in range(50)]
    assert len(model.calls) == 50


async def test_write_behind_flushes_by_size_time_and_close(sqlite_store: Store) -> None:
    cache = ResponseCache(sqlite_store, "on", flush_every=3, flush_after_s=0.1)
    cache.put("a", "fake/m", {"text": "a"})
    cache.put("b", "fake/m", {"text": "b"})
    assert sqlite_store.cache_count() == 0
    assert await cache.get("a") == {"text": "a"}  # a buffered entry is already a hit
    cache.put("c", "fake/m", {"text": "c"})
    assert sqlite_store.cache_count() == 3  # the buffer was full
    assert await cache.get("a") == '{"text": "a"}'  # a stored entry comes back as its JSON text
    cache.put("d", "fake/m", {"text": "d"})
    await asyncio.sleep(0.25)
    assert sqlite_store.cache_count() == 4  # written by the timer
    cache.put("e", "fake/m", {"text": "e"})
    assert cache.flush() == 1
    assert sqlite_store.cache_count() == 5


async def test_a_paid_reply_is_in_the_store_after_the_next_loop_turn(sqlite_store: Store) -> None:
    """What a `kill -9` can cost: a paid reply is written in the event-loop turn after it returns, with no
    write-behind window (tests/models/test_kill_and_signals.py kills a real run once its store holds them)."""
    model = FakeModel("openai/scripted", default="paid")  # not fake/: its replies take the paid path
    async with Engine(store=sqlite_store) as engine:
        assert isinstance(await engine.generate(model, HELLO), Completion)
        await asyncio.sleep(0)  # one loop turn
        assert sqlite_store.cache_count() == 1


FORGETFUL = """
import asyncio, sys
from livemed.models import Engine
from livemed.models.fake import FakeModel
from livemed.store import Store

async def main():
    engine = Engine(store=Store(sys.argv[1]))
    await engine.generate(FakeModel("fake/m", default="kept"), [{"role": "user", "content": "q"}])
    assert engine.cache.pending == 1  # nobody calls flush() or aclose()

asyncio.run(main())
"""


def test_a_buffer_nobody_flushed_is_written_at_exit(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "forgetful.db"
    subprocess.run([sys.executable, "-c", FORGETFUL, str(path)], check=True, timeout=60)
    with Store(path) as store:
        assert store.cache_count() == 1


async def test_the_key_never_leaves_for_the_store_cache_logs_or_messages(
    make_engine: MakeEngine,
    server: FakeOpenAIServer,
    api_key: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Store(tmp_path / "secret-check.db")
    engine, model = make_engine(store=store, max_retries=1)
    echo = f"you sent {api_key}, echoing it back"
    server.script(
        Behavior(text="an answer that never saw the key"),
        Behavior(text=f"model text that repeats the key {api_key}"),  # a hostile endpoint echoes the key
        Behavior(status=500, error_message=echo),
        Behavior(status=500, error_message=echo),
        Behavior(status=400, error_message=echo),
        Behavior(status=401, error_message=echo),
    )
    outcomes: list[object] = []
    with caplog.at_level(logging.DEBUG):
        for i in range(5):
            outcomes.append(await engine.generate(model, [{"role": "user", "content": f"q{i}"}]))
        await engine.aclose()
    assert len(server.chat_requests) == 6
    assert all(
        r.headers["authorization"] == f"Bearer {api_key}" for r in server.chat_requests
    )  # sent only there
    texts = [o.model_dump_json() for o in outcomes if isinstance(o, (Completion, CallFailure))]
    assert len(texts) == 5
    assert [type(o) for o in outcomes] == [Completion] + [CallFailure] * 4
    for text in [*texts, caplog.text, repr(model.__dict__.get("config"))]:
        assert api_key not in text
    refused = outcomes[1]
    assert isinstance(refused, CallFailure)  # the echoing reply is refused, not rewritten and stored
    assert refused.reason == "fatal"
    assert "holds the API key" in refused.detail
    assert "[redacted]" in texts[2]  # the key in an error's text is scrubbed
    store.close()
    assert_not_in_files(tmp_path, api_key)  # the database and its WAL/SHM files, byte by byte
    assert store.cache_count() == 1  # the answer that did not hold the key


def assert_not_in_files(folder: Path, secret: str) -> None:
    files = list(folder.iterdir())
    assert any(f.name.endswith(".db") for f in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), path.name


async def test_exception_messages_never_hold_the_key(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str
) -> None:
    from livemed.models import FatalModelError, TransientModelError

    _engine, model = make_engine()
    server.script(
        Behavior(status=404, error_message=f"model not found for key {api_key}"),
        Behavior(status=503, error_message=f"overloaded {api_key}"),
    )
    with pytest.raises(FatalModelError) as fatal:
        await model.generate(HELLO, settings=Settings())
    with pytest.raises(TransientModelError) as transient:
        await model.generate(HELLO, settings=Settings())
    for exc in (fatal.value, transient.value):
        assert api_key not in str(exc)
        assert api_key not in repr(exc.args)
        assert exc.__cause__ is None
    await model.aclose()


async def test_structured_output_on_a_cached_run_keeps_compliance(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str, sqlite_store: Store
) -> None:
    from pydantic import BaseModel

    class Verdict(BaseModel):
        met: bool

    engine, model = make_engine(store=sqlite_store)
    server.script(Behavior(text='{"met": true}'))
    llm = LLM(engine, model, stage="grade")
    first = await llm.structured(HELLO, Verdict)
    second = await llm.structured(HELLO, Verdict)
    assert first.value == second.value == Verdict(met=True)
    assert second.completion is not None
    assert second.completion.cached
    assert len(server.chat_requests) == 1
    assert engine.compliance_of(model.id).total == 2


async def test_max_cost_over_http_stops_before_exceeding(server: FakeOpenAIServer, api_key: str) -> None:
    from livemed.config import Price
    from livemed.errors import BudgetExceededError
    from tests.models.conftest import MODEL_ID, server_config

    config = server_config(server)
    config.prices[MODEL_ID] = Price(input=10_000.0, output=10_000.0)  # $0.01 per token
    server.default = Behavior(text="ok", prompt_tokens=11, completion_tokens=1)  # $0.12 per call
    from livemed.models import get_model

    model = get_model(MODEL_ID, config=config)
    results: list[object] = []
    async with Engine(config=config, max_cost=0.5) as engine:
        for i in range(10):
            try:
                results.append(
                    await engine.generate(
                        model, [{"role": "user", "content": f"q{i}"}], Settings(max_tokens=1)
                    )
                )
            except BudgetExceededError:
                break
        assert engine.accounting.cost_usd <= 0.5
    # 4 calls = $0.48; a 5th would cross $0.50 (estimates learn the billed prompt size after the 1st call)
    assert len(results) == len(server.chat_requests) == 4
    assert all(isinstance(r, Completion) for r in results)


def test_make_engine_maps_the_cache_flags(tmp_path: Path) -> None:
    from livemed.cli.common import make_engine
    from livemed.cli.context import AppState

    state = AppState(store_override=str(tmp_path / "flags.db"))
    assert make_engine(state).cache_mode == "on"
    assert make_engine(state, no_cache=True).cache_mode == "off"
    assert make_engine(state, cache_read_only=True).cache_mode == "read-only"
    assert make_engine(state, max_cost=2.5).max_cost == 2.5
    state.store.close()


def test_store_batch_cache_methods(any_store: Store) -> None:
    entries = [(f"k{i}", "fake/m", {"text": f"t{i}", "n": i}) for i in range(1200)]
    assert any_store.cache_put_many(entries) == 1200
    assert any_store.cache_put_many([("k1", "fake/m", {"text": "again"})]) == 1  # upsert
    keys = [f"k{i}" for i in range(0, 1300, 2)]  # crosses the 500-key chunks; k1200+ are absent
    found = any_store.cache_get_many(keys)
    assert len(found) == 600
    assert found["k998"] == {"text": "t998", "n": 998}
    assert any_store.cache_get_many(["k1"]) == {"k1": {"text": "again"}}
    assert any_store.cache_get_many_json(["k3"]) == {"k3": '{"text": "t3", "n": 3}'}
    assert any_store.cache_count() == 1200


def test_cache_put_many_writes_a_str_payload_as_it_is_and_a_dict_as_json(sqlite_store: Store) -> None:
    sqlite_store.cache_put_many([("a", "openai/m", '{"text":"a"}'), ("b", "openai/m", {"text": "b"})])
    assert sqlite_store.cache_get_many_json(["a", "b"]) == {"a": '{"text":"a"}', "b": '{"text": "b"}'}
    assert sqlite_store.cache_get_many(["a", "b"]) == {"a": {"text": "a"}, "b": {"text": "b"}}


async def test_the_same_request_asked_twice_at_once_is_paid_once(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str, sqlite_store: Store
) -> None:
    engine, model = make_engine(store=sqlite_store)
    server.script(Behavior(text="shared", latency=0.2))
    first, second, other = await asyncio.gather(
        engine.generate(model, HELLO),
        engine.generate(model, HELLO),
        engine.generate(model, [{"role": "user", "content": "Something else."}]),
    )
    assert isinstance(first, Completion)
    assert isinstance(second, Completion)
    assert isinstance(other, Completion)
    assert (first.text, second.text) == ("shared", "shared")
    assert (first.cached, second.cached, other.cached) == (False, True, False)
    assert len(server.chat_requests) == 2  # HELLO once, the other question once
    assert engine.accounting.by_model[model.id].cache_hits == 1
    assert engine.accounting.by_model[model.id].calls == 2
    await engine.aclose()


async def test_a_failed_shared_call_is_asked_again_and_cache_off_shares_nothing(
    make_engine: MakeEngine, server: FakeOpenAIServer, api_key: str, sqlite_store: Store
) -> None:
    engine, model = make_engine(store=sqlite_store)
    server.script(Behavior(status=400, error_message="bad request", latency=0.2), Behavior(text="second try"))
    first, second = await asyncio.gather(engine.generate(model, HELLO), engine.generate(model, HELLO))
    assert isinstance(first, CallFailure)  # a failure is never handed to the one who waited
    assert isinstance(second, Completion)
    assert (second.text, second.cached) == ("second try", False)
    assert len(server.chat_requests) == 2
    await engine.aclose()
    off, model_off = make_engine(store=sqlite_store, cache="off")
    server.script(Behavior(text="a", latency=0.1), Behavior(text="b", latency=0.1))
    replies = await asyncio.gather(off.generate(model_off, HELLO), off.generate(model_off, HELLO))
    assert all(isinstance(r, Completion) and not r.cached for r in replies)
    assert len(server.chat_requests) == 4  # cache off: each call is sent
    await off.aclose()


async def test_a_caller_cancelled_while_another_waits_leaves_the_waiter_its_own_call(
    sqlite_store: Store,
) -> None:
    asked = asyncio.Event()

    async def answer(messages: object, settings: object) -> str:
        if len(model.calls) == 1:  # the leader's call: in flight until it is cancelled
            asked.set()
            await asyncio.Event().wait()
        return "answer"

    model = FakeModel("fake/slow", function=answer)
    async with Engine(store=sqlite_store) as engine:
        leader = asyncio.create_task(engine.generate(model, HELLO))
        await asyncio.wait_for(asked.wait(), timeout=30)
        waiter = asyncio.create_task(engine.generate(model, HELLO))
        for _ in range(20):  # loop turns, not time: the waiter reaches the leader's call and waits on it
            await asyncio.sleep(0)
        assert (len(model.calls), waiter.done()) == (1, False)  # it waits for the call in flight
        leader.cancel()
        result = await waiter
    assert leader.cancelled()
    assert isinstance(result, Completion)
    assert (result.text, result.cached) == ("answer", False)  # asked on its own once the first stopped
    assert len(model.calls) == 2


# A reply's text, and a whole body, full of the letters of keys that are not secrets.
NOT_SECRET_TEXT = "There is none of the red flags; see sign 1 (e.g. EMPTY bed, sk-no-key-required, ollama)."


@pytest.mark.parametrize("key", ["none", "se", "1", "e", "EMPTY", "sk-no-key-required", "ollama"])
async def test_a_reply_is_stored_as_it_came_whatever_the_key(
    key: str,
    make_engine: MakeEngine,
    server: FakeOpenAIServer,
    sqlite_store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from livemed.models.engine import cache_key

    monkeypatch.setenv(KEY_ENV, key)  # a short key or a placeholder: not a secret, nothing is scrubbed
    body: dict[str, Any] = {
        "id": "chatcmpl-1e1",
        "object": "chat.completion",
        "created": 1_700_000_001,
        "model": "fake-gpt",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": NOT_SECRET_TEXT},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 21, "total_tokens": 32},
    }
    verdict = '{"explanation": "none missed; see the response", "criteria_met": true}'
    verdict_body = {**body, "choices": [{**body["choices"][0], "message": {"content": verdict}}]}
    server.script(
        Behavior(body=body),
        Behavior(body=verdict_body),
        Behavior(status=400, error_message="none of these values is accepted: e.g. 1 or se"),
    )
    engine, model = make_engine(store=sqlite_store)
    asked: list[list[Message]] = [[{"role": "user", "content": f"q{i}"}] for i in range(3)]
    reply, graded, refused = [await engine.generate(model, m) for m in asked]
    await engine.aclose()
    assert isinstance(reply, Completion)
    assert isinstance(graded, Completion)
    assert (reply.text, reply.raw, graded.text) == (NOT_SECRET_TEXT, body, verdict)
    keys = [cache_key(model, m, Settings()) for m in asked[:2]]
    stored = sqlite_store.cache_get_many_json(keys)
    texts = [json.loads(stored[k]) for k in keys]
    assert [(t["text"], t["raw"]) for t in texts] == [(NOT_SECRET_TEXT, body), (verdict, verdict_body)]
    assert json.dumps(NOT_SECRET_TEXT)[1:-1].encode() in b"".join(t.encode() for t in stored.values())
    assert isinstance(refused, CallFailure)
    assert "none of these values is accepted: e.g. 1 or se" in refused.detail
    assert server.chat_requests[0].headers["authorization"] == f"Bearer {key}"
