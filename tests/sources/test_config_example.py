from __future__ import annotations

import tomllib
from datetime import date

from livemed.config import Config, starter_config
from livemed.sources import SOURCES, source_settings


def test_starter_example_for_sources_and_prefilter_is_valid_once_uncommented() -> None:
    text = starter_config(date(2025, 1, 1))
    block = text[text.index("# Data sources") : text.index("# Models")]
    settings = [line.removeprefix("# ") for line in block.splitlines() if line.startswith(("# [", "# "))]
    data = tomllib.loads("\n".join(line for line in settings if line.startswith("[") or " = " in line))
    config = Config.model_validate(data)
    assert config.prefilter.languages == ["en"]
    assert config.sources["files"]["mapping"]["post"] == "body"
    for name in SOURCES:
        source_settings(name, config)  # each validates against its own Settings
