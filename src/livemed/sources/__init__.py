"""Dated document sources. `SOURCES` maps a name to "module:Class" and is imported lazily.

`build_source(name, config)` validates `[sources.NAME]` against that source's `Settings`, reads an
API key from the environment variable the settings name (never stored or logged), and returns an
object satisfying `livemed.sources.base.Source`.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from pydantic import BaseModel, ValidationError

from livemed.config import Config, describe_validation_error
from livemed.errors import ConfigError, UnknownNameError
from livemed.sources.base import Source

SOURCES: dict[str, str] = {
    "europepmc": "livemed.sources.europepmc:EuropePMC",
    "pubmed": "livemed.sources.pubmed:PubMed",
    "stackexchange": "livemed.sources.stackexchange:StackExchange",
    "files": "livemed.sources.files:Files",
    "demo": "livemed.sources.demo:Demo",
}


def _load(name: str) -> tuple[type[Any], type[BaseModel]]:
    if name not in SOURCES:
        raise UnknownNameError("source", name, SOURCES)
    module_name, class_name = SOURCES[name].split(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name), module.Settings


def source_settings(name: str, config: Config) -> BaseModel:
    """The validated settings of one source (defaults where `[sources.NAME]` is absent)."""
    _, settings_cls = _load(name)
    try:
        return settings_cls.model_validate(config.sources.get(name, {}))
    except ValidationError as exc:
        raise ConfigError(f"livemed.toml sources.{name}: {describe_validation_error(exc)}") from None


def build_source(name: str, config: Config) -> Source:
    """A ready source object for `name`, configured from `[sources.NAME]`."""
    cls, _ = _load(name)
    settings = source_settings(name, config)
    key_env = getattr(settings, "api_key_env", None)
    if key_env is None:
        return cls(settings)  # type: ignore[no-any-return]
    return cls(settings, api_key=os.environ.get(key_env) or None)  # type: ignore[no-any-return]


__all__ = ["SOURCES", "Source", "build_source", "source_settings"]
