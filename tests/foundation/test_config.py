from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path

import pytest

from livemed.config import Config, load_config, starter_config, store_location
from livemed.errors import ConfigError


def test_starter_config_parses_and_validates(tmp_path: Path) -> None:
    text = starter_config(date(2025, 6, 30))
    assert tomllib.loads(text)["cutoff"] == date(2025, 6, 30)
    path = tmp_path / "livemed.toml"
    path.write_text(text)
    config = load_config(path)
    assert config.cutoff == date(2025, 6, 30)
    assert config.thresholds.s_inf == 0.5


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config() == Config()


def test_models_and_prices(tmp_path: Path) -> None:
    path = tmp_path / "livemed.toml"
    path.write_text(
        '[models."openai/gpt-4o-mini"]\napi_key_env = "OPENAI_API_KEY"\nmax_concurrency = 4\n'
        '[prices."openai/gpt-4o-mini"]\ninput = 0.15\noutput = 0.6\n'
    )
    config = load_config(path)
    assert config.model_settings("openai/gpt-4o-mini").max_concurrency == 4
    assert config.model_settings("other/model").max_concurrency == 16
    assert config.prices["openai/gpt-4o-mini"].output == 0.6


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cutoff = 'soon'", "cutoff"),
        ("[thresholds]\ns_inf = 2", "thresholds.s_inf"),
        ("colour = 'red'", "colour"),
        ("store = ", "invalid TOML"),
        ('[models."openai/x"]\nmax_concurrency = 0', "max_concurrency"),
    ],
)
def test_bad_config_names_the_file_field_and_value(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "livemed.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_missing_config_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="livemed init"):
        load_config(tmp_path / "nope.toml")


def test_store_location_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proj" / "livemed.toml"
    path.parent.mkdir()
    path.write_text('store = "data/store.db"\n')
    config = load_config(path)
    monkeypatch.delenv("LIVEMED_STORE", raising=False)
    assert store_location(config) == str(tmp_path / "proj" / "data" / "store.db")
    monkeypatch.setenv("LIVEMED_STORE", "/env/store.db")
    assert store_location(config) == "/env/store.db"
    assert store_location(config, "cli.db") == "cli.db"
    monkeypatch.delenv("LIVEMED_STORE")
    assert store_location(Config()) == "livemed.db"
