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
    assert config.model_settings("other/model").max_concurrency == 512
    assert config.prices["openai/gpt-4o-mini"].output == 0.6


def test_an_hf_model_batches_16_calls_unless_its_table_says_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "livemed.toml"
    path.write_text('[models."hf/./runs/b"]\nmax_concurrency = 64\n[models."hf/./runs/c"]\ntimeout_s = 5\n')
    config = load_config(path)
    assert config.model_settings("hf/./runs/a").max_concurrency == 16  # no table
    assert config.model_settings("hf/./runs/b").max_concurrency == 64  # set
    assert config.model_settings("hf/./runs/c").max_concurrency == 16  # a table without it
    assert config.model_settings("hf/./runs/c").timeout_s == 5
    assert config.model_settings("vllm/m").max_concurrency == 512


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


def test_curate_paths_are_relative_to_the_project_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = project / "livemed.toml"
    path.write_text('[curate]\nevidence = "passages.jsonl"\nindex_dir = "indexes"\n', encoding="utf-8")
    config = load_config(path)
    assert config.curate.evidence == str(project.resolve() / "passages.jsonl")
    assert config.curate.index_dir == str(project.resolve() / "indexes")
    for kept in ("demo", "medquad", str(tmp_path / "elsewhere.jsonl")):  # names and absolute paths stay
        path.write_text(f'[curate]\nevidence = "{kept}"\n', encoding="utf-8")
        assert load_config(path).curate.evidence == kept


def test_a_bundled_demo_path_of_another_installation_is_this_ones_copy(tmp_path: Path) -> None:
    from livemed.demo import demo_evidence_path
    from livemed.evidence.factory import resolve_evidence

    gone = "/old/venv/lib/python3.11/site-packages/livemed/demo/data/evidence.jsonl"
    assert resolve_evidence(gone) == demo_evidence_path()
    assert resolve_evidence("demo") == demo_evidence_path()
    mine = tmp_path / "livemed" / "demo" / "data" / "evidence.jsonl"  # a real file there is the user's
    mine.parent.mkdir(parents=True)
    mine.write_text("{}\n")
    assert resolve_evidence(mine) == mine
    assert resolve_evidence(tmp_path / "missing.jsonl") == tmp_path / "missing.jsonl"
