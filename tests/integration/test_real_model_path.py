"""The pipeline through the real OpenAI-compatible path: CLI → engine → openai client → HTTP → fake server.

Cases come from the bundled demo (offline curation); a candidate answers and a judge grades over real HTTP.
Checks what users rely on: every call is stored once, a re-run makes no request, the key is never stored.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.common.prompts import parse_blocks
from livemed.records import Answer, Grade, GradeFailure, Rubric, Score
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer

CANDIDATE = "openai/fake-candidate"
JUDGE = "openai/fake-judge"


def _reply(body: dict[str, Any]) -> Behavior:
    """The judge says "met" for positive criteria only; the candidate gives a fixed answer."""
    if body["model"] == "fake-judge":
        prompt = body["messages"][-1]["content"]
        [criterion] = [b for b in parse_blocks(prompt) if b.name == "criterion"]
        met = not criterion.attrs["points"].startswith("-")
        return Behavior(text=json.dumps({"explanation": "checked", "criteria_met": met}))
    return Behavior(text="Rest, drink fluids and see your doctor if it gets worse.", latency=0.01)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=_reply) as fake:
        yield fake


def _project(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    config = tmp_path / "livemed.toml"
    models = "".join(
        f'[models."{model}"]\nbase_url = "{server.base_url}"\napi_key_env = "LIVEMED_TEST_KEY"\n'
        "max_retries = 1\ntimeout_s = 5\n"
        for model in (CANDIDATE, JUDGE)
    )
    config.write_text(f'store = "livemed.db"\ncutoff = 2024-01-01\n{models}', encoding="utf-8")
    return config


def run(config: Path, *argv: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--config", str(config), *argv])
    assert result.exit_code == code, result.output
    return result.output + (str(result.exception) if code else "")


def test_answer_grade_score_over_http_resume_and_keep_the_key_secret(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-livemed-" + secrets.token_hex(12)
    monkeypatch.setenv("LIVEMED_TEST_KEY", key)
    config = _project(tmp_path, server)
    run(config, "harvest", "--source", "demo", "--until", "2024-06-30")
    run(config, "curate", "--evidence", str(_demo_evidence()))
    run(config, "rubrics", "--writer", "offline/rules")
    store = Store(tmp_path / "livemed.db")
    cases = store.count()["case"]
    criteria = sum(len(r.criteria) for r in store.iter(Rubric))
    assert cases >= 3

    out = run(config, "answer", "--model", CANDIDATE)
    assert store.count()["answer"] == cases
    assert "model usage" in out
    run(config, "grade", "--judge", JUDGE)
    grades = list(store.iter(Grade))
    assert len(grades) == criteria
    assert store.count().get(GradeFailure.kind, 0) == 0
    assert any(g.met for g in grades)
    assert not all(g.met for g in grades)
    run(config, "scores", "--judge", JUDGE)
    assert store.count()["score"] == cases
    assert all(0.0 <= s.score <= 1.0 for s in store.iter(Score))
    requests = len(server.chat_requests)
    assert requests == cases + criteria
    assert all(
        {k.lower(): v for k, v in r.headers.items()}["authorization"] == f"Bearer {key}"
        for r in server.chat_requests
    )

    again = run(config, "answer", "--model", CANDIDATE, "--no-cache")
    run(config, "grade", "--judge", JUDGE)
    assert len(server.chat_requests) == requests  # finished work is skipped, not paid for again
    assert f"{cases} already done" in again or "wrote 0" in again
    assert all(a.model == CANDIDATE for a in store.iter(Answer))

    store.close()
    for path in tmp_path.glob("livemed.db*"):
        assert key.encode() not in path.read_bytes()


def _demo_evidence() -> Path:
    from livemed.demo import demo_evidence_path

    return demo_evidence_path()


def test_an_unreachable_endpoint_is_reported_with_its_reason(tmp_path: Path) -> None:
    config = tmp_path / "livemed.toml"
    config.write_text(
        'store = "livemed.db"\ncutoff = 2024-01-01\n[models."vllm/nowhere"]\n'
        'base_url = "http://127.0.0.1:9/v1"\nmax_retries = 0\ntimeout_s = 2\n',
        encoding="utf-8",
    )
    run(config, "harvest", "--source", "demo", "--until", "2024-03-31")
    run(config, "curate", "--evidence", str(_demo_evidence()))
    out = run(config, "answer", "--model", "vllm/nowhere", code=1)
    assert "rejected (retries_exhausted)" in out
    assert "cannot reach http://127.0.0.1:9/v1" in out.replace("\n", "")
    assert "answers failed: gave up after 1 attempt(s): vllm/nowhere: cannot reach" in out
    assert Store(tmp_path / "livemed.db").count().get("answer", 0) == 0
