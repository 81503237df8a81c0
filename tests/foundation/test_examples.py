"""The example project file must stay valid as the configuration grows."""

from __future__ import annotations

from livemed.config import load_config
from livemed.models.registry import split_model_id
from livemed.sources import source_settings
from tests.conftest import REPO_ROOT


def test_example_weekly_config_is_valid() -> None:
    config = load_config(REPO_ROOT / "examples" / "livemed.toml")
    assert config.cutoff is not None
    assert set(config.prices) <= set(config.models)
    for model_id, settings in config.models.items():
        split_model_id(model_id)
        assert settings.base_url or settings.api_key_env
    for name in config.sources:
        source_settings(name, config)
