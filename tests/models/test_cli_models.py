"""`livemed models check` and `list`, in-process and as the installed program; the progress display."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from livemed.cli import app
from livemed.models import Engine
from livemed.models.fake import FakeModel
from tests.fakes.openai_server import Behavior, FakeOpenAIServer
from tests.models.conftest import KEY_ENV

GOOD = '{"ok": true, "word": "OK"}'


def write_config(tmp_path: Path, server: FakeOpenAIServer, **extra: str) -> Path:
    lines = [
        '[models."openai/fake-gpt"]',
        f'base_url = "{server.base_url}"',
        f'api_key_env = "{KEY_ENV}"',
        "timeout_s = 2",
        *(f"{k} = {v}" for k, v in extra.items()),
        '[prices."openai/fake-gpt"]',
        "input = 0.15",
        "output = 0.6",
    ]
    path = tmp_path / "livemed.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_check_reports_latency_usage_and_json_schema(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    config = write_config(tmp_path, server)
    server.script(
        Behavior(text="OK", latency=0.05, prompt_tokens=12, completion_tokens=1), Behavior(text=GOOD)
    )
    result = CliRunner().invoke(app, ["-c", str(config), "models", "check", "openai/fake-gpt"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "plain call: ok in 0." in out
    assert "12 prompt + 1 completion tokens" in out
    assert "JSON-schema response format: works (valid on the first try)" in out
    assert f"key from ${KEY_ENV}: set" in out
    assert api_key not in result.output
    first, second = server.chat_requests
    assert first.body is not None
    assert second.body is not None
    assert first.body["max_tokens"] == 1024  # room for a thinking model to think and answer
    assert second.body["response_format"]["type"] == "json_schema"


def test_check_says_when_json_schema_output_does_not_work(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    config = write_config(tmp_path, server)
    server.script(Behavior(text="OK"), Behavior(text="ok!"), Behavior(text="ok!!"))
    result = CliRunner().invoke(app, ["-c", str(config), "models", "check", "openai/fake-gpt"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "JSON-schema response format: does not work" in out
    assert "json_schema = false" in out


def test_check_fails_with_exit_1_on_a_refused_key(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    config = write_config(tmp_path, server)
    server.default = Behavior(status=401)
    result = CliRunner().invoke(app, ["-c", str(config), "models", "check", "openai/fake-gpt"])
    assert result.exit_code == 1
    out = " ".join(result.output.split())
    assert "call failed (fatal, 1 attempt(s))" in out
    assert f"${KEY_ENV}" in out
    assert len(server.chat_requests) == 1


def test_check_with_the_installed_program(tmp_path: Path, server: FakeOpenAIServer, api_key: str) -> None:
    program = Path(sys.executable).with_name("livemed")
    if not program.exists():
        pytest.skip("the livemed program is not installed in this environment")
    config = write_config(tmp_path, server)
    server.script(Behavior(text="OK"), Behavior(text=GOOD))
    env = {**os.environ, KEY_ENV: api_key, "COLUMNS": "200"}
    done = subprocess.run(
        [str(program), "-c", str(config), "models", "check", "openai/fake-gpt"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "plain call: ok" in done.stdout
    assert "JSON-schema response format: works" in done.stdout
    assert api_key not in done.stdout + done.stderr
    assert len(server.chat_requests) == 2
    assert not (tmp_path / "livemed.db").exists()  # a check stores nothing


def test_list_shows_providers_configured_models_and_key_state(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    config = write_config(tmp_path, server, requests_per_minute="500")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["-c", str(config), "models", "list"])
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in (
        "openai",
        "vllm",
        "ollama",
        "http://localhost:8000/v1",
        "openai/fake-gpt",
        "500 req/min",
    ):
        assert expected in out
    assert f"{KEY_ENV} (set)" in out
    assert "configured models (livemed.toml [models])" in out  # not eaten as rich markup
    assert "0.15 / 0.6" in out
    assert api_key not in out


def test_engine_progress_shows_calls_hits_retries_failures_tokens_cost() -> None:
    from livemed.cli.common import engine_progress
    from livemed.models import TransientModelError

    model = FakeModel("fake/p", responses=[TransientModelError("busy"), "a b c", "d e"])
    engine = Engine()
    engine.backoff_base_s = 0.001
    buffer = StringIO()

    async def work() -> None:
        await engine.generate(model, [{"role": "user", "content": "one"}])
        await engine.generate(model, [{"role": "user", "content": "two"}])

    with engine_progress(engine, "grading", total=2, out=Console(file=buffer, width=200)) as progress:
        asyncio.run(work())
        assert engine.observers == [progress]
    assert engine.observers == []
    text = buffer.getvalue()
    assert "grading" in text
    assert "2/2" in text
    assert "1 retries" in text
    assert "0 failed" in text
    assert "calls/s" in text


def test_check_names_a_missing_key_variable(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = write_config(tmp_path, server)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["-c", str(config), "models", "check", "openai/fake-gpt"]
    )
    assert result.exit_code == 1
    out = " ".join(result.output.split())
    assert f"environment variable {KEY_ENV} is not set" in out
    assert "api_key_env for this model in livemed.toml" in out
    assert "plain call failed (fatal, not sent)" in out
    assert server.chat_requests == []


def test_a_max_cost_stop_keeps_paid_answers_and_prints_the_usage(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    from livemed.records import Answer
    from livemed.store import Store
    from tests.foundation.factories import case

    config = tmp_path / "livemed.toml"
    config.write_text(
        f'[models."openai/fake-gpt"]\nbase_url = "{server.base_url}"\napi_key_env = "{KEY_ENV}"\n'
        "max_concurrency = 2\n"
        '[prices."openai/fake-gpt"]\ninput = 1000\noutput = 1000\n',  # $0.001 per token
        encoding="utf-8",
    )
    store_path = tmp_path / "s.db"
    with Store(store_path) as store:
        # distinct questions: identical prompts are one call (the later ones come from the cache)
        distinct = [case(f"demo:{i}") for i in range(12)]
        store.put([c.model_copy(update={"query": f"{c.query} ({i})"}) for i, c in enumerate(distinct)])
    args = ["-c", str(config), "--store", str(store_path), "answer", "--model", "openai/fake-gpt"]
    # one call reserves ~$0.18 (its prompt, the patient message in a data block, plus 20 output tokens)
    # and costs $0.012: $0.25 lets a few calls through, never all 12
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, [*args, "--max-tokens", "20", "--max-cost", "0.25"]
    )
    assert result.exit_code == 1, result.output
    assert "--max-cost $0.25" in f"{result.output}{result.exception}"
    assert "model usage" in result.output  # what the stopped run spent is shown
    with Store(store_path) as store:
        stored = sum(1 for _ in store.iter(Answer))
    assert 0 < stored < 12
    assert stored == len(server.chat_requests)  # every call that was paid for kept its answer


REPO = Path(__file__).resolve().parents[2]
OFFLINE_ID = re.compile(r"\boffline/[a-z][a-z0-9-]*[a-z0-9]")


def test_list_names_every_offline_id_the_docs_name(tmp_path: Path) -> None:
    """Each `offline/…` id in README.md and docs/ is one `models list` shows."""
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = {m for path in texts for m in OFFLINE_ID.findall(path.read_text(encoding="utf-8"))}
    assert {"offline/lexical", "offline/always-a", "offline/lexical-overlap", "offline/heuristic"} <= named
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["--store", str(tmp_path / "s.db"), "models", "list"]
    )
    assert result.exit_code == 0, result.output
    listed = set(OFFLINE_ID.findall(result.output))
    assert named - listed == set()


def test_a_missing_key_is_one_line_and_claims_no_call(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.store import Store
    from tests.foundation.factories import case

    program = Path(sys.executable).with_name("livemed")
    if not program.exists():
        pytest.skip("the livemed program is not installed in this environment")
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = write_config(tmp_path, server)
    store_path = tmp_path / "s.db"
    with Store(store_path) as store:
        store.put([case(f"demo:{i}") for i in range(3)])
    done = subprocess.run(
        [str(program), "-c", str(config), "--store", str(store_path), "answer", "-m", "openai/fake-gpt"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()  # one line, not a warning and then the same again
    assert line.startswith("error: 3 of 3 answers failed: openai/fake-gpt: environment variable")
    assert f"{KEY_ENV} is not set" in line
    [row] = [r for r in done.stdout.splitlines() if "openai/fake-gpt" in r and "│" in r]
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[:5] == ["openai/fake-gpt", "0", "0", "0", "3"]  # calls, cache hits, retries, failures
    assert server.chat_requests == []
