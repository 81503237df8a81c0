"""Accounting of model calls (calls, tokens, cost per model and stage), events for observers, compliance."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from livemed.config import Config
from livemed.records import Usage

log = logging.getLogger("livemed.models")

EventKind = Literal["completion", "cache_hit", "retry", "failure"]
FINISHING: frozenset[str] = frozenset({"completion", "cache_hit", "failure"})


@dataclass(frozen=True, slots=True)
class EngineEvent:
    """One accounting step, as observers see it.

    `completion`, `cache_hit` and `failure` each end one `generate()` call; `retry` is an attempt
    that failed and will be tried again. `usage` is what this step added to the totals.
    """

    kind: EventKind
    model: str
    stage: str
    usage: Usage
    detail: str = ""

    @property
    def finishes_call(self) -> bool:
        return self.kind in FINISHING


Observer = Callable[[EngineEvent], None]


USAGE_FIELDS: tuple[str, ...] = tuple(Usage.model_fields)


class Accounting:
    """Calls, tokens and cost per model and per stage.

    Counts are kept in plain lists (adding pydantic models on every call costs more than the rest of
    a cache hit); `by_model` and `by_stage` build `Usage` records from them when asked.
    """

    def __init__(self) -> None:
        self._models: dict[str, list[float]] = {}
        self._stages: dict[tuple[str, str], list[float]] = {}

    def record(self, stage: str, model: str, delta: Usage) -> None:
        self.add(stage, model, **{name: getattr(delta, name) for name in USAGE_FIELDS})

    def add(self, stage: str, model: str, **counts: float) -> None:
        """Add counts (Usage field names) for `model` in `stage`."""
        by_model = self._models.get(model)
        if by_model is None:
            by_model = self._models[model] = [0] * len(USAGE_FIELDS)
        by_stage = self._stages.get((stage, model))
        if by_stage is None:
            by_stage = self._stages[(stage, model)] = [0] * len(USAGE_FIELDS)
        for index, name in enumerate(USAGE_FIELDS):
            value = counts.get(name)
            if value:
                by_model[index] += value
                by_stage[index] += value

    @property
    def by_model(self) -> dict[str, Usage]:
        """Usage per model (a fresh mapping; an unknown model reads as zero usage)."""
        usage: dict[str, Usage] = defaultdict(Usage)
        usage.update((model, _usage(values)) for model, values in self._models.items())
        return usage

    @property
    def by_stage(self) -> dict[str, dict[str, Usage]]:
        """Usage per stage, then per model."""
        usage: dict[str, dict[str, Usage]] = defaultdict(lambda: defaultdict(Usage))
        for (stage, model), values in self._stages.items():
            usage[stage][model] = _usage(values)
        return usage

    @property
    def cost_usd(self) -> float:
        index = USAGE_FIELDS.index("cost_usd")
        return float(sum(values[index] for values in self._models.values()))

    def totals(self) -> Usage:
        sums = [0.0] * len(USAGE_FIELDS)
        for values in self._models.values():
            for index, value in enumerate(values):
                sums[index] += value
        return _usage(sums)


def _usage(values: list[float]) -> Usage:
    return Usage(
        **{
            name: value if name == "cost_usd" else int(value)
            for name, value in zip(USAGE_FIELDS, values, strict=True)
        }
    )


def cost_of(config: Config, model_id: str, prompt_tokens: float, completion_tokens: float) -> float:
    """US dollars for these tokens under the price table (0 when the model has no price)."""
    price = config.prices.get(model_id)
    if price is None:
        return 0.0
    return (prompt_tokens * price.input + completion_tokens * price.output) / 1e6


@dataclass
class Compliance:
    """Structured-output compliance of one model: valid on the first try, after one repair, or not."""

    first_try: int = 0
    repaired: int = 0
    total: int = 0

    @property
    def failed(self) -> int:
        return self.total - self.first_try - self.repaired

    @property
    def rate(self) -> float:
        """Share of structured calls that ended valid (first try or repaired)."""
        return (self.first_try + self.repaired) / self.total if self.total else 0.0

    @classmethod
    def from_counts(cls, counts: list[int]) -> Compliance:
        first_try, repaired, total = counts
        return cls(first_try=first_try, repaired=repaired, total=total)


def notify(observers: list[Observer], event: EngineEvent) -> None:
    """Tell every observer; a failing observer is logged and never breaks a call."""
    for observer in list(observers):
        try:
            observer(event)
        except Exception:
            log.exception("an engine observer failed on %s", event.kind)
