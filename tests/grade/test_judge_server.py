"""The fake server's judge responder (used by benchmarks/grading.py) against the real judge, over HTTP."""

from __future__ import annotations

import json

import pytest

from livemed.config import Config, ModelConfig
from livemed.grade.grader import MODES, Mode, Target, batched_messages, per_criterion_messages
from livemed.grade.stage import grade_all
from livemed.models import LLM, Engine, get_model
from livemed.records import Grade, GradeFailure
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.fakes.openai_server import FakeOpenAIServer, judge_reply, judge_responder

KEY_ENV = "LIVEMED_TEST_JUDGE_KEY"
MODEL = "openai/fake-judge"


def targets(n: int) -> list[Target]:
    out = []
    for i in range(n):
        case = make_case(f"demo:{i}")
        out.append(Target(make_answer(case), case, make_rubric(case)))
    return out


def test_judge_reply_follows_the_sign_of_the_points_in_both_prompts() -> None:
    t = targets(1)[0]
    positive, _, negative = t.rubric.criteria
    assert json.loads(judge_reply(per_criterion_messages([], "r", positive)[0]["content"]))["criteria_met"]
    assert not json.loads(judge_reply(per_criterion_messages([], "r", negative)[0]["content"]))[
        "criteria_met"
    ]
    batch = json.loads(judge_reply(batched_messages([], "r", t.rubric.criteria)[0]["content"]))
    assert [(v["id"], v["criteria_met"]) for v in batch["verdicts"]] == [(1, True), (2, True), (3, False)]


@pytest.mark.parametrize("mode", MODES)
async def test_real_judge_parses_the_fake_servers_verdicts(
    mode: Mode, sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    work = targets(3)
    with FakeOpenAIServer(responder=judge_responder()) as server:
        config = Config(
            models={MODEL: ModelConfig(base_url=server.base_url, api_key_env=KEY_ENV, timeout_s=5)}
        )
        async with Engine(store=None, config=config, cache="off") as engine:
            judge = LLM(engine, get_model(MODEL, config=config), stage="grade")
            result = await grade_all(sqlite_store, work, judge, mode=mode)
        requests = len(server.chat_requests)
    assert result.written.get("grade") == 9
    assert not list(sqlite_store.iter(GradeFailure))
    grades = {(g.answer_id, g.criterion_id): g.met for g in sqlite_store.iter(Grade)}
    expected = {(t.answer.id, c.id): c.polarity == "positive" for t in work for c in t.rubric.criteria}
    assert grades == expected
    assert requests == (9 if mode == "per-criterion" else 3)  # no repairs were needed
    usage = engine.accounting.by_model[MODEL]
    assert usage.calls == requests
    assert usage.prompt_tokens > 100 * requests  # counted by the server over the whole prompt
