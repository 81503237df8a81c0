"""Fixtures for the model layer: a fake OpenAI-compatible server on 127.0.0.1 and a key in the environment."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from livemed.config import Config, ModelConfig, Price
from livemed.models import Engine, get_model
from livemed.models.openai import OpenAICompatibleModel
from livemed.store import Store
from tests.fakes.openai_server import FakeOpenAIServer

KEY_ENV = "LIVEMED_TEST_OPENAI_KEY"
MODEL_ID = "openai/fake-gpt"
MakeEngine = Callable[..., tuple[Engine, OpenAICompatibleModel]]
"""The type of the `make_engine` fixture."""


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = "sk-livemed-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_ENV, key)
    return key


def server_config(server: FakeOpenAIServer, **settings: Any) -> Config:
    """A config whose `openai/fake-gpt` points at the fake server, with quick timeouts and retries."""
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "timeout_s": 2.0,
        "max_retries": 2,
    }
    values.update(settings)
    return Config(
        models={MODEL_ID: ModelConfig(**values)},
        prices={MODEL_ID: Price(input=1.0, output=2.0)},
    )


def fast(engine: Engine) -> Engine:
    """Shrink exponential backoff so retry tests take milliseconds (Retry-After is still honoured)."""
    engine.backoff_base_s = 0.01
    return engine


@pytest.fixture
async def make_engine(
    server: FakeOpenAIServer,
) -> AsyncIterator[MakeEngine]:
    """`make_engine(store=None, cache="on", max_cost=None, **model_settings)` -> (engine, model).

    Every engine built is closed after the test (cache flushed, HTTP sessions closed).
    """
    made: list[Engine] = []

    def build(
        store: Store | None = None, cache: Any = "on", max_cost: float | None = None, **settings: Any
    ) -> tuple[Engine, OpenAICompatibleModel]:
        config = server_config(server, **settings)
        engine = fast(Engine(store=store, config=config, cache=cache, max_cost=max_cost))
        model = get_model(MODEL_ID, config=config)
        assert isinstance(model, OpenAICompatibleModel)
        made.append(engine)
        return engine, model

    yield build
    for engine in made:
        await engine.aclose()
