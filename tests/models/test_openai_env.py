"""`openai/` models honour `$OPENAI_BASE_URL` (livemed.toml wins); `models list` says where requests go."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.config import Config, ModelConfig
from livemed.models import Completion, Engine, Message, Settings, get_model
from livemed.models.engine import cache_key
from livemed.models.openai import OpenAICompatibleModel
from tests.fakes.openai_server import FakeOpenAIServer
from tests.models.conftest import KEY_ENV


def model_for(config: Config, model_id: str = "openai/fake-gpt") -> OpenAICompatibleModel:
    model = get_model(model_id, config=config)
    assert isinstance(model, OpenAICompatibleModel)
    return model


async def test_openai_models_without_base_url_send_to_openai_base_url(
    server: FakeOpenAIServer, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    config = Config(models={"openai/fake-gpt": ModelConfig(api_key_env=KEY_ENV, timeout_s=2)})
    model = model_for(config)
    assert (model.endpoint, model.base_url_source) == (server.base_url, "OPENAI_BASE_URL")
    async with Engine(config=config, cache="off") as engine:
        reply = await engine.generate(model, [{"role": "user", "content": "hi"}], Settings(max_tokens=5))
    assert isinstance(reply, Completion)
    (request,) = server.chat_requests
    assert request.headers["authorization"] == f"Bearer {api_key}"
    assert request.body is not None
    assert request.body["max_tokens"] == 5  # a compatible server, not api.openai.com


def test_livemed_toml_wins_over_the_environment_and_other_presets_ignore_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    configured = Config(models={"openai/x": ModelConfig(base_url="http://config-host/v1")})
    assert model_for(configured, "openai/x").endpoint == "http://config-host/v1"
    assert model_for(Config(), "vllm/x").endpoint == "http://localhost:8000/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert model_for(Config(), "openai/x").endpoint == "https://api.openai.com/v1"


def test_the_endpoint_from_the_environment_is_part_of_the_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    messages: list[Message] = [{"role": "user", "content": "hi"}]
    official = cache_key(model_for(Config(), "openai/x"), messages, Settings())
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.internal/v1")
    proxied = cache_key(model_for(Config(), "openai/x"), messages, Settings())
    assert official != proxied


def test_models_list_says_where_each_models_requests_go(
    tmp_path: Path, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.internal:4000/v1")
    config = tmp_path / "livemed.toml"
    config.write_text(
        f'[models."openai/from-env"]\napi_key_env = "{KEY_ENV}"\n'
        '[models."openai/pinned"]\nbase_url = "http://pinned-host/v1"\n'
        '[models."vllm/local"]\nmax_concurrency = 2\n',
        encoding="utf-8",
    )
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["-c", str(config), "models", "list"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│ ")}
    assert "http://proxy.internal:4000/v1 (from OPENAI_BASE_URL)" in rows["openai/from-env"]
    assert "http://pinned-host/v1" in rows["openai/pinned"]
    assert "OPENAI_BASE_URL" not in rows["openai/pinned"]
    assert "http://localhost:8000/v1 (provider default)" in rows["vllm/local"]
    assert "requests go to" in result.output
    assert api_key not in result.output


async def test_the_sdks_organization_and_project_variables_are_honoured(
    server: FakeOpenAIServer, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-livemed-test")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_livemed_test")
    config = Config(models={"openai/fake-gpt": ModelConfig(api_key_env=KEY_ENV, timeout_s=2)})
    async with Engine(config=config, cache="off") as engine:
        await engine.generate(model_for(config), [{"role": "user", "content": "hi"}])
    (request,) = server.chat_requests
    assert request.headers["openai-organization"] == "org-livemed-test"
    assert request.headers["openai-project"] == "proj_livemed_test"
