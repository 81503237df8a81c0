"""Accounting of model calls (calls, tokens, cost per model and stage), events for observers, compliance."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass
class Accounting:
    """Calls, tokens and cost per model and per stage."""

    by_model: dict[str, Usage] = field(default_factory=lambda: defaultdict(Usage))
    by_stage: dict[str, dict[str, Usage]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(Usage))
    )

    def record(self, stage: str, model: str, delta: Usage) -> None:
        self.by_model[model] = self.by_model[model].add(delta)
        self.by_stage[stage][model] = self.by_stage[stage][model].add(delta)

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd for u in self.by_model.values())

    def totals(self) -> Usage:
        total = Usage()
        for usage in self.by_model.values():
            total = total.add(usage)
        return total


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
