"""The `train` marker: tests that need `livemed[train]` (torch, transformers, TRL), skipped without it."""

from __future__ import annotations

from collections.abc import Callable
from importlib.util import find_spec
from typing import TypeVar

import pytest

MODULES = ("torch", "transformers", "trl", "datasets", "tokenizers", "peft")
MISSING = [name for name in MODULES if find_spec(name) is None]

# TRL 1.16 itself calls transformers APIs that transformers 5.2x deprecates (FutureWarning).
TRAIN_MARKS = [
    pytest.mark.train,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs livemed[train] ({', '.join(MISSING)} missing): pip install -e '.[dev,train]', "
        "then pytest -m train",
    ),
    pytest.mark.filterwarnings("ignore:.*is deprecated and will be removed in v6:FutureWarning"),
]


F = TypeVar("F", bound=Callable[..., object])


def needs_train(func: F) -> F:
    """The `train` marks on one test."""
    for mark in reversed(TRAIN_MARKS):
        func = mark(func)
    return func
