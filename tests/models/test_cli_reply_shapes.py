"""The real CLI (`answer`, `grade`, `models check`) against every recorded reply shape of real servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.records import Answer, Grade, GradeFailure, Rejection
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.fakes.openai_server import Behavior, FakeOpenAIServer, recorded
from tests.models.test_cli_models import GOOD, write_config
from tests.models.test_reply_shapes import EXPECTED

FAILING = sorted(name for name, (reason, _, _) in EXPECTED.items() if reason is not None)
WORKING = sorted(name for name, (reason, _, _) in EXPECTED.items() if reason is None)
MODEL = "openai/fake-gpt"


def invoke(tmp_path: Path, server: FakeOpenAIServer, *args: str) -> tuple[int, str]:
    config = write_config(tmp_path, server, max_retries="2", max_concurrency="1")
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["-c", str(config), "--store", str(tmp_path / "s.db"), *args]
    )
    return result.exit_code, " ".join(result.output.split())


def seed(tmp_path: Path, *, answers: bool = False, cases: int = 2) -> list[str]:
    made = [make_case(f"demo:{i}", query=f"Question {i}: what can I take?") for i in range(cases)]
    with Store(tmp_path / "s.db") as store:
        store.put(made)
        if answers:
            store.put([make_rubric(c) for c in made] + [make_answer(c) for c in made])
    return [c.id for c in made]


def calls_for(shape: str, calls: int) -> int:
    """Requests `calls` calls make against `shape` (max_retries 2; a 402 stops the model after one)."""
    return 1 if shape == "openrouter_402" else calls * EXPECTED[shape][1]


@pytest.mark.parametrize("shape", sorted(EXPECTED))
def test_answer_stores_an_answer_with_text_or_a_rejection(
    shape: str, tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    seed(tmp_path)
    server.default = recorded(shape)
    code, out = invoke(tmp_path, server, "answer", "--model", MODEL)
    assert code == (0 if EXPECTED[shape][0] is None else 1), out  # failed calls fail the command
    assert len(server.chat_requests) == calls_for(shape, 2)
    with Store(tmp_path / "s.db") as store:
        answers = list(store.iter(Answer))
        rejections = list(store.iter(Rejection))
    assert all(a.text.strip() for a in answers)  # never an empty answer
    assert "<think>" not in " ".join(a.text for a in answers)
    reason = EXPECTED[shape][0]
    if reason is None:
        assert (len(answers), rejections) == (2, [])
    else:
        assert answers == []
        assert sorted(r.reason for r in rejections) == [reason, reason]


@pytest.mark.parametrize("shape", FAILING)
def test_answer_failures_are_asked_again_by_the_next_run(
    shape: str, tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    seed(tmp_path)
    server.default = recorded(shape)
    invoke(tmp_path, server, "answer", "--model", MODEL)
    before = len(server.chat_requests)
    server.default = recorded("vllm_normal")
    invoke(tmp_path, server, "answer", "--model", MODEL)
    assert len(server.chat_requests) == before + 2  # nothing was cached from the failed replies
    with Store(tmp_path / "s.db") as store:
        assert len(list(store.iter(Answer))) == 2
        assert list(store.iter(Rejection)) == []


@pytest.mark.parametrize("shape", sorted(EXPECTED))
def test_grade_stores_grades_or_call_failed(
    shape: str, tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    seed(tmp_path, answers=True, cases=1)
    server.default = recorded(shape)
    code, out = invoke(tmp_path, server, "grade", "--judge", MODEL)
    assert code == (0 if EXPECTED[shape][0] is None else 1), out
    assert len(server.chat_requests) == calls_for(shape, 3)  # 3 criteria, no repair call
    with Store(tmp_path / "s.db") as store:
        grades = list(store.iter(Grade))
        failures = list(store.iter(GradeFailure))
    if EXPECTED[shape][0] is None:
        assert (len(grades), failures) == (3, [])
        assert all(g.met for g in grades)  # the verdict after the reasoning, not the one inside it
    else:
        assert grades == []
        assert [f.reason for f in failures] == ["call_failed"] * 3


CHECK_SAYS = {
    "openrouter_finish_error": "plain call failed (provider_error, 2 attempt(s))",  # a check retries once
    "openrouter_402": "insufficient credits (402)",
    "http200_error_body": "plain call failed (provider_error, 1 attempt(s))",
    "ratelimit_429_body": "plain call failed (retries_exhausted",
    "tool_calls_only": "plain call failed (no_text, 1 attempt(s))",
    "length_content_null": "plain call failed: ran out of tokens (finish_reason length) — raise --max-tokens",
    "truncated_body": "malformed/truncated response body from",
}


@pytest.mark.parametrize("shape", sorted(EXPECTED))
def test_models_check_against_each_shape(
    shape: str, tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    if shape in CHECK_SAYS:
        server.default = recorded(shape)
    else:
        server.script(recorded(shape), Behavior(text=GOOD))
    code, out = invoke(tmp_path, server, "models", "check", MODEL)
    if shape in CHECK_SAYS:
        assert code == 1, out
        assert CHECK_SAYS[shape] in out
        assert "cannot reach" not in out
    else:
        assert code == 0, out
        assert "plain call: ok" in out
        assert "JSON-schema response format: works" in out
    if shape == "llamacpp_no_usage":
        assert "(estimated: the endpoint sent no usage)" in out
    assert api_key not in out


def test_models_check_names_the_mode_that_works_after_a_schema_refusal(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    refusal = Behavior(status=400, error_message="response_format json_schema is not supported")
    server.script(Behavior(text="OK"), refusal, Behavior(text=GOOD))
    code, out = invoke(tmp_path, server, "models", "check", MODEL, "--max-tokens", "300")
    assert code == 0, out
    assert "JSON-schema response format: refused (400)" in out
    assert "instructed JSON: works" in out
    assert "JSON-schema response format: works" not in out
    bodies = [r.body or {} for r in server.chat_requests]
    assert [b.get("max_tokens") for b in bodies] == [300, 300, 300]
    assert "response_format" not in bodies[2]


def test_models_check_says_a_thinking_model_ran_out_of_tokens_in_the_structured_call(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    server.script(recorded("vllm_reasoning_content"), recorded("length_content_null"))
    code, out = invoke(tmp_path, server, "models", "check", MODEL)
    assert code == 0, out
    assert "JSON-schema response format: ran out of tokens (finish_reason length) — raise --max-tokens" in out
    assert "characters of reasoning kept apart" in out


def test_usage_table_marks_estimated_tokens(tmp_path: Path, server: FakeOpenAIServer, api_key: str) -> None:
    seed(tmp_path)
    server.default = recorded("llamacpp_no_usage")
    _, out = invoke(tmp_path, server, "answer", "--model", MODEL)
    assert "tokens (and cost) estimated for 2 call(s): the endpoint sent no usage" in out
    assert "~" in out


@pytest.mark.parametrize("shape", sorted(EXPECTED))
def test_the_installed_livemed_against_each_shape(
    shape: str, tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    """The fault matrix through the installed program: exit code, its last line, records, requests."""
    import os
    import subprocess
    import sys

    seed(tmp_path)
    server.default = recorded(shape)
    config = write_config(tmp_path, server, max_retries="2", max_concurrency="1")
    argv = ["-c", str(config), "--store", str(tmp_path / "s.db"), "answer", "--model", MODEL]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "livemed"), *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    reason = EXPECTED[shape][0]
    assert done.returncode == (0 if reason is None else 1), done.stderr
    assert len(server.chat_requests) == calls_for(shape, 2)
    with Store(tmp_path / "s.db") as store:
        answers, rejections = list(store.iter(Answer)), list(store.iter(Rejection))
    if reason is None:
        assert (len(answers), rejections, done.stderr) == (2, [], "")
    else:
        assert answers == []
        assert [r.reason for r in rejections] == [reason, reason]
        last = " ".join(done.stderr.strip().splitlines()[-1].split())
        assert last.startswith("error: 2 of 2 answers failed: ")
        assert last.endswith("; run again to retry them")
    assert api_key not in done.stdout + done.stderr
