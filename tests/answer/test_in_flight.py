"""The stages keep as many calls in flight as the model allows, not a fixed window (counted at the server)."""

from __future__ import annotations

import pytest

from livemed.answer.stage import answer_all, in_flight
from livemed.config import Config, ModelConfig
from livemed.grade.grader import Target
from livemed.grade.stage import grade_all
from livemed.models import LLM, Engine, Settings, get_model
from livemed.records import Answer, Grade
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.fakes.openai_server import Behavior, FakeOpenAIServer, judge_responder

KEY_ENV = "LIVEMED_TEST_IN_FLIGHT_KEY"
MODEL = "openai/fake-wide"
CONCURRENCY = 256


def config_for(server: FakeOpenAIServer) -> Config:
    settings = ModelConfig(
        base_url=server.base_url, api_key_env=KEY_ENV, timeout_s=30, max_concurrency=CONCURRENCY
    )
    return Config(models={MODEL: settings})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")


def test_the_window_follows_max_concurrency() -> None:
    config = Config(models={MODEL: ModelConfig(max_concurrency=512)})
    llm = LLM(Engine(config=config, cache="off"), get_model(MODEL, config=config), stage="grade")
    assert in_flight(llm) == 1024


async def test_answers_keep_more_than_64_calls_in_flight(sqlite_store: Store) -> None:
    cases = [make_case(f"demo:{i}", query=f"Question {i}?") for i in range(200)]
    with FakeOpenAIServer(
        default=Behavior(text="Rest and fluids."), record=False, hold_until_in_flight=65
    ) as server:
        config = config_for(server)
        async with Engine(config=config, cache="off") as engine:
            answerer = LLM(engine, get_model(MODEL, config=config), stage="answer")
            result = await answer_all(sqlite_store, cases, answerer, settings=Settings())
    assert result.written["answer"] == 200
    assert server.max_in_flight > 64  # the old fixed window kept at most 64 items in flight
    assert server.count == 200


async def test_grades_keep_more_than_64_calls_in_flight(sqlite_store: Store) -> None:
    targets = []
    for i in range(100):
        case = make_case(f"demo:{i}")
        targets.append(Target(make_answer(case), case, make_rubric(case)))
    with FakeOpenAIServer(responder=judge_responder(), record=False, hold_until_in_flight=65) as server:
        config = config_for(server)
        async with Engine(config=config, cache="off") as engine:
            judge = LLM(engine, get_model(MODEL, config=config), stage="grade")
            result = await grade_all(sqlite_store, targets, judge)
    assert result.written["grade"] == 300
    assert len(list(sqlite_store.iter(Grade))) == 300
    assert not list(sqlite_store.iter(Answer))
    assert server.max_in_flight > 64
