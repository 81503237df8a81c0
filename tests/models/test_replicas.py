"""Several replicas behind one model id (`base_url = [...]`): requests balanced, a dead one skipped,
one cache key whichever replica answered."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

import pytest

from livemed.config import Config, ModelConfig
from livemed.models import Completion, Engine, Message, Settings, get_model
from livemed.models.http import Transport
from livemed.models.openai import OpenAICompatibleModel, Replicas
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer

MODEL = "vllm/replicated"


def messages(i: int) -> list[Message]:
    return [{"role": "user", "content": f"question {i}"}]


def test_requests_are_balanced_over_the_replicas_of_one_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with (
        FakeOpenAIServer(default=Behavior(latency=0.05)) as one,
        FakeOpenAIServer(default=Behavior(latency=0.05)) as two,
    ):
        # One call at a time: none is in flight at any pick, so the replicas take turns, whatever the timing.
        config = Config(models={MODEL: ModelConfig(base_url=[one.base_url, two.base_url], max_concurrency=1)})
        model = get_model(MODEL, config=config)
        assert isinstance(model, OpenAICompatibleModel)
        assert model.endpoint == one.base_url  # the first replica names the endpoint (cache key)

        async def ask() -> list[object]:
            engine = Engine(config=config)
            try:
                return await asyncio.gather(*(engine.generate(model, messages(i)) for i in range(40)))
            finally:
                await engine.aclose()

        replies = asyncio.run(ask())
        assert all(isinstance(r, Completion) for r in replies)
        assert (len(one.chat_requests), len(two.chat_requests)) == (20, 20)


def test_a_request_goes_to_the_replica_with_the_fewest_in_flight_and_ties_take_turns() -> None:
    stub = cast(Transport, SimpleNamespace(loop=None))  # pick() reads only the counts, never a transport
    replicas = Replicas([stub, stub, stub])
    assert [replicas.pick() for _ in range(4)] == [0, 1, 2, 0]  # none in flight: in turn
    replicas.in_flight = [2, 1, 2]
    assert [replicas.pick() for _ in range(3)] == [1, 1, 1]  # the fewest in flight, whatever the turn
    replicas.in_flight = [1, 0, 0]
    assert [replicas.pick() for _ in range(2)] == [1, 2]  # among the fewest, in turn


def test_an_unreachable_replica_is_skipped_and_the_call_succeeds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer() as alive:
        dead = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
        config = Config(models={MODEL: ModelConfig(base_url=[dead, alive.base_url], max_retries=2)})
        model = get_model(MODEL, config=config)

        async def ask() -> list[object]:
            engine = Engine(config=config)
            try:
                return [await engine.generate(model, messages(i)) for i in range(6)]
            finally:
                await engine.aclose()

        replies = asyncio.run(ask())
    assert all(isinstance(r, Completion) for r in replies)
    assert len(alive.chat_requests) == 6  # after the first refusal, the dead replica is left alone


def test_the_response_cache_is_shared_by_the_replicas(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer() as one, FakeOpenAIServer() as two:
        config = Config(models={MODEL: ModelConfig(base_url=[one.base_url, two.base_url])})
        model = get_model(MODEL, config=config)
        store = Store(tmp_path / "s.db")

        async def ask() -> None:
            engine = Engine(config=config, store=store)
            try:
                for _ in range(3):
                    assert isinstance(await engine.generate(model, messages(0), Settings()), Completion)
            finally:
                await engine.aclose()

        asyncio.run(ask())
        store.close()
    assert len(one.chat_requests) + len(two.chat_requests) == 1


def test_an_empty_replica_list_is_refused() -> None:
    from livemed.errors import LivemedError

    with pytest.raises((LivemedError, ValueError)):
        ModelConfig(base_url=[])
