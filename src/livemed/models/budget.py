"""`--max-cost`: the engine's budget, with in-flight reservations (a mixin of `Engine`)."""

from __future__ import annotations

import asyncio

from livemed.config import Config
from livemed.errors import BudgetExceededError
from livemed.models.accounting import Accounting, cost_of, log
from livemed.models.base import Message, Model, Settings
from livemed.models.limits import ModelLimits, estimate_tokens

DEFAULT_OUTPUT_ESTIMATE = 512  # completion tokens assumed for budgets when max_tokens is unset
FREE_PROVIDERS = ("fake/", "offline/")


class Budget:
    """Reservations against `max_cost`; `Engine` sets the attributes below."""

    config: Config
    accounting: Accounting
    max_cost: float | None
    _reserved_usd: float
    _reservations: int
    _budget_stop: str | None
    _budget_changed: tuple[asyncio.AbstractEventLoop, asyncio.Condition] | None
    _unpriced_warned: set[str]

    def _output_estimate(self, settings: Settings, limits: ModelLimits) -> int:
        per_choice = settings.max_tokens or max(DEFAULT_OUTPUT_ESTIMATE, limits.largest_completion)
        return per_choice * settings.n

    async def _reserve_budget(
        self, model: Model, messages: list[Message], settings: Settings, limits: ModelLimits
    ) -> float | None:
        """Reserve the most this call may cost (None without a budget), waiting while others are in flight.

        A call whose worst case does not fit waits until the calls in flight have ended (they usually
        cost less than reserved); the run stops only when nothing is in flight and it still does not
        fit, so a stop never cancels a call that was already paid for.
        """
        if self.max_cost is None:
            return None
        self._warn_unpriced(model.id)
        prompt = estimate_tokens(messages) * limits.prompt_ratio
        estimate = cost_of(self.config, model.id, prompt, self._output_estimate(settings, limits))
        changed = self._budget_condition()
        async with changed:
            while True:
                if self._budget_stop is not None:
                    raise BudgetExceededError(self._budget_stop)
                spent = self.accounting.cost_usd
                if spent + self._reserved_usd + estimate <= self.max_cost:
                    self._reserved_usd += estimate
                    self._reservations += 1
                    return estimate
                if self._reservations == 0:
                    self._budget_stop = (
                        f"stopping before exceeding --max-cost ${self.max_cost:.2f} "
                        f"(spent ${spent:.4f}, next call up to ${estimate:.4f}); "
                        "finished work is stored and will not be paid for again"
                    )
                    changed.notify_all()
                    raise BudgetExceededError(self._budget_stop)
                await changed.wait()

    async def _release_budget(self, reserved: float | None) -> None:
        if reserved is None:
            return
        changed = self._budget_condition()
        async with changed:
            self._reservations -= 1
            self._reserved_usd = self._reserved_usd - reserved if self._reservations else 0.0
            changed.notify_all()

    def _budget_condition(self) -> asyncio.Condition:
        """The budget's condition for the running event loop (an engine may serve several loops)."""
        loop = asyncio.get_running_loop()
        if self._budget_changed is None or self._budget_changed[0] is not loop:
            self._budget_changed = (loop, asyncio.Condition())
        return self._budget_changed[1]

    def _warn_unpriced(self, model_id: str) -> None:
        if model_id in self.config.prices or model_id.startswith(FREE_PROVIDERS):
            return
        if model_id not in self._unpriced_warned:
            self._unpriced_warned.add(model_id)
            log.warning("%s has no price in [prices]; --max-cost counts its calls as free", model_id)
