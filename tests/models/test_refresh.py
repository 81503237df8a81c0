"""`refresh` skips the cached reply: what makes `grade --retry-failures` reach the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.models import LLM, Completion, Engine, Message
from livemed.models.openai import OpenAICompatibleModel
from livemed.records import Grade, GradeFailure
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.fakes.openai_server import Behavior, FakeOpenAIServer, judge_responder
from tests.models.test_cli_models import write_config

MESSAGES: list[Message] = [{"role": "user", "content": "hello"}]


async def test_refresh_sends_the_call_and_replaces_the_cached_reply(
    server: FakeOpenAIServer,
    make_engine: Callable[..., tuple[Engine, OpenAICompatibleModel]],
    api_key: str,
    sqlite_store: Store,
) -> None:
    engine, model = make_engine(store=sqlite_store)
    server.script(Behavior(text="first"), Behavior(text="second"))
    assert isinstance(await engine.generate(model, MESSAGES), Completion)
    cached = await engine.generate(model, MESSAGES)
    assert isinstance(cached, Completion)
    assert (cached.text, cached.cached, len(server.chat_requests)) == ("first", True, 1)
    fresh = await LLM(engine, model, refresh=True).generate(MESSAGES)
    assert isinstance(fresh, Completion)
    assert (fresh.text, fresh.cached, len(server.chat_requests)) == ("second", False, 2)
    engine.flush()
    again = await engine.generate(model, MESSAGES)
    assert isinstance(again, Completion)
    assert (again.text, again.cached) == ("second", True)  # the fresh reply replaced the entry
    assert sqlite_store.cache_count() == 1


def broken_judge(broken: dict[str, bool]) -> Callable[[dict[str, Any]], Behavior]:
    """Valid verdicts, except an unparsable one for the fever criterion while `broken["on"]`."""
    valid = judge_responder()

    def respond(body: dict[str, Any]) -> Behavior:
        everything = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
        if broken["on"] and "urgent care for fever" in everything:
            return Behavior(text="I think it is met, probably.")
        return valid(body)

    return respond


@pytest.mark.parametrize("mode", ["per-criterion", "batched"])
def test_grade_retry_failures_reaches_the_model_for_exactly_the_failed_criteria(
    mode: str, tmp_path: Path, api_key: str
) -> None:
    case = make_case("demo:1")
    with Store(tmp_path / "s.db") as store:
        store.put([case, make_rubric(case), make_answer(case)])
    broken = {"on": True}
    with FakeOpenAIServer(responder=broken_judge(broken)) as server:
        config = write_config(tmp_path, server, max_concurrency="1")
        args = ["-c", str(config), "--store", str(tmp_path / "s.db"), "grade", "--judge", "openai/fake-gpt"]
        args += ["--mode", mode]
        first = CliRunner().invoke(app, args)
        assert first.exit_code == 1, first.output  # a verdict that cannot be used fails the run
        unusable = 1 if mode == "per-criterion" else 3
        assert f"{unusable} of 3 verdicts unusable (unparsable {unusable})" in str(first.exception)
        assert "--retry-failures" in str(first.exception)
        with Store(tmp_path / "s.db") as store:
            failed = [f.reason for f in store.iter(GradeFailure)]
        assert failed == (["unparsable"] if mode == "per-criterion" else ["unparsable"] * 3)
        sent = len(server.chat_requests)
        plain = CliRunner().invoke(app, args)  # a plain re-run leaves verdicts the model gave alone
        assert plain.exit_code == 0, plain.output
        assert len(server.chat_requests) == sent
        broken["on"] = False
        retried = CliRunner().invoke(app, [*args, "--retry-failures"])
        assert retried.exit_code == 0, retried.output
        resent = server.chat_requests[sent:]
    assert len(resent) == 1  # the failed call only (one criterion, or the one batch), past the cache
    if mode == "per-criterion":
        assert "urgent care for fever" in str(resent[0].body)
    with Store(tmp_path / "s.db") as store:
        assert list(store.iter(GradeFailure)) == []
        assert len(list(store.iter(Grade))) == 3
