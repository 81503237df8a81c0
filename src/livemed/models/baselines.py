"""The offline (no-LLM) baselines, `offline/NAME`: registered by the stages that define them (one line
each in `OFFLINE`) and imported lazily, as the providers of `models/registry.py` are.

`offline_model` is the `offline/` provider of `registry.PROVIDERS`. This module imports nothing of the
registry, so the registry's lazy tables never lead back to it; `load_target` is the `"module:attr"`
lookup both use.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from livemed.config import Config
from livemed.errors import UnknownNameError
from livemed.models.base import Model

# offline baseline name -> "module:factory"; each factory is called with no arguments, or with the
# domain pack (`pack=`) when it takes one and one is given.
OFFLINE: dict[str, str] = {
    "curate-baseline": "livemed.curate.baseline:curate_baseline",
    "reference": "livemed.answer.baselines:reference",
    "retrieval": "livemed.answer.baselines:retrieval",
    "empty": "livemed.answer.baselines:empty",
    "unsafe": "livemed.answer.unsafe:unsafe",
    "memorised": "livemed.answer.simulation:memorised",
    "drift-control": "livemed.answer.simulation:drift_control",
    "lexical": "livemed.grade.lexical:LexicalGrader",
    "rules": "livemed.rubrics.rules:RuleWriter",
}


def load_target(target: str) -> Any:
    """The attribute `attr` of module `module` for `"module:attr"`, the module imported if need be."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def offline_model(name: str, *, config: Config | None = None, **kwargs: Any) -> Model:
    """An offline (no-LLM) baseline registered in `OFFLINE`."""
    if name not in OFFLINE:
        raise UnknownNameError("offline baseline", name, OFFLINE)
    factory = load_target(OFFLINE[name])
    if "pack" in kwargs and "pack" not in inspect.signature(factory).parameters:
        kwargs.pop("pack")
    model: Model = factory(**kwargs)
    return model


__all__ = ["OFFLINE", "load_target", "offline_model"]
