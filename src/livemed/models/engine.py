"""The call engine: every LLM call in livemed goes through `Engine.generate`.

It owns, per model: a concurrency limit, request- and token-rate limits, a per-call timeout,
bounded retries with exponential backoff and jitter that honour Retry-After, the response cache
(in the store), and accounting of calls, tokens and cost per model and per stage. A call that
cannot succeed returns a `CallFailure`; it never raises for a per-item problem and never turns
an error into text. Only `BudgetExceededError` stops a run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from aiolimiter import AsyncLimiter

from livemed.config import Config, ModelConfig
from livemed.errors import BudgetExceededError
from livemed.models.base import (
    CallFailure,
    Completion,
    FatalModelError,
    Message,
    Model,
    Settings,
    TransientModelError,
)
from livemed.records import Usage
from livemed.store import Store

CacheMode = Literal["on", "read-only", "off"]

BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 30.0


def backoff_delay(attempt: int, retry_after: float | None = None, *, base: float = BACKOFF_BASE_S) -> float:
    """Seconds before retry `attempt` (0-based): Retry-After if given, else full-jitter exponential."""
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, BACKOFF_MAX_S)
    return random.uniform(0, min(BACKOFF_MAX_S, base * 2**attempt))


def cache_key(model: Model, messages: list[Message], settings: Settings) -> str:
    """Hash of provider, model, endpoint, messages, every sampling setting and the sample index."""
    material = {
        "model": model.id,
        "endpoint": model.endpoint,
        "messages": messages,
        "settings": settings.model_dump(mode="json"),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class _Limits:
    """Live limiters for one model."""

    config: ModelConfig
    semaphore: asyncio.Semaphore
    requests: AsyncLimiter | None
    tokens: AsyncLimiter | None

    @classmethod
    def from_config(cls, config: ModelConfig) -> _Limits:
        rpm, tpm = config.requests_per_minute, config.tokens_per_minute
        return cls(
            config=config,
            semaphore=asyncio.Semaphore(config.max_concurrency),
            requests=AsyncLimiter(rpm, 60) if rpm else None,
            tokens=AsyncLimiter(tpm, 60) if tpm else None,
        )

    async def acquire_rate(self, estimated_tokens: int) -> None:
        if self.requests is not None:
            await self.requests.acquire()
        if self.tokens is not None:
            assert self.config.tokens_per_minute is not None
            await self.tokens.acquire(min(float(estimated_tokens), self.config.tokens_per_minute))


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


def estimate_tokens(messages: list[Message]) -> int:
    """A cheap upper-ish estimate (4 characters per token) for rate limits and budgets."""
    return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)


class Engine:
    """Runs model calls with limits, retries, cache and accounting."""

    def __init__(
        self,
        *,
        store: Store | None = None,
        config: Config | None = None,
        cache: CacheMode = "on",
        max_cost: float | None = None,
    ) -> None:
        self.store = store
        self.config = config or Config()
        self.cache_mode: CacheMode = cache if store is not None else "off"
        self.max_cost = max_cost
        self.accounting = Accounting()
        self.compliance: dict[str, list[int]] = defaultdict(
            lambda: [0, 0, 0]
        )  # valid first try, repaired, total
        self._limits: dict[str, _Limits] = {}

    # ------------------------------------------------------------------ public

    async def generate(
        self,
        model: Model,
        messages: list[Message],
        settings: Settings | None = None,
        *,
        stage: str = "default",
    ) -> Completion | CallFailure:
        """One call: cache, then limits and retries; a `CallFailure` when it cannot succeed."""
        settings = settings or Settings()
        key = cache_key(model, messages, settings)
        cached = self._cache_lookup(key)
        if cached is not None:
            self.accounting.record(stage, model.id, Usage(cache_hits=1))
            return cached
        if self.cache_mode == "read-only":
            self.accounting.record(stage, model.id, Usage(failures=1))
            return CallFailure(
                model=model.id, reason="cache_miss", detail="not in the cache (--cache-read-only)"
            )
        self._check_budget(model, messages, settings)
        result = await self._call_with_retries(model, messages, settings, stage)
        if isinstance(result, Completion) and self.cache_mode == "on" and self.store is not None:
            self.store.cache_put(key, model.id, result.model_dump(mode="json"))
        return result

    def limits(self, model: Model) -> ModelConfig:
        return self._limits_for(model).config

    # ------------------------------------------------------------------ internals

    def _limits_for(self, model: Model) -> _Limits:
        if model.id not in self._limits:
            self._limits[model.id] = _Limits.from_config(self.config.model_settings(model.id))
        return self._limits[model.id]

    def _cache_lookup(self, key: str) -> Completion | None:
        if self.cache_mode == "off" or self.store is None:
            return None
        payload = self.store.cache_get(key)
        if payload is None:
            return None
        completion = Completion.model_validate(payload)
        completion.cached = True
        return completion

    async def _call_with_retries(
        self, model: Model, messages: list[Message], settings: Settings, stage: str
    ) -> Completion | CallFailure:
        limits = self._limits_for(model)
        attempts = limits.config.max_retries + 1
        last: TransientModelError | TimeoutError | None = None
        for attempt in range(attempts):
            try:
                completion = await self._attempt(model, messages, settings, limits)
            except FatalModelError as exc:
                self.accounting.record(stage, model.id, Usage(calls=1, failures=1))
                return CallFailure(
                    model=model.id, reason="fatal", detail=str(exc), status=exc.status, attempts=attempt + 1
                )
            except (TransientModelError, TimeoutError) as exc:
                last = exc
                self.accounting.record(stage, model.id, Usage(calls=1))
                if attempt + 1 < attempts:
                    self.accounting.record(stage, model.id, Usage(retries=1))
                    await asyncio.sleep(backoff_delay(attempt, getattr(exc, "retry_after", None)))
                continue
            self.accounting.record(stage, model.id, self._usage_of(model, completion))
            return completion
        self.accounting.record(stage, model.id, Usage(failures=1))
        detail = str(last) or type(last).__name__ if last else "no attempt made"
        return CallFailure(
            model=model.id,
            reason="retries_exhausted",
            detail=f"gave up after {attempts} attempt(s): {detail}",
            status=getattr(last, "status", None),
            attempts=attempts,
        )

    async def _attempt(
        self, model: Model, messages: list[Message], settings: Settings, limits: _Limits
    ) -> Completion:
        async with limits.semaphore:
            await limits.acquire_rate(estimate_tokens(messages) + (settings.max_tokens or 0))
            started = time.perf_counter()
            try:
                completion = await asyncio.wait_for(
                    model.generate(messages, settings=settings), timeout=limits.config.timeout_s
                )
            except TimeoutError:
                raise TimeoutError(f"no answer within {limits.config.timeout_s:g} s") from None
            if not completion.latency_s:
                completion.latency_s = time.perf_counter() - started
            return completion

    def _usage_of(self, model: Model, completion: Completion) -> Usage:
        price = self.config.prices.get(model.id)
        cost = 0.0
        if price is not None:
            cost = (
                completion.prompt_tokens * price.input + completion.completion_tokens * price.output
            ) / 1e6
        return Usage(
            calls=1,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            cost_usd=cost,
        )

    def _check_budget(self, model: Model, messages: list[Message], settings: Settings) -> None:
        if self.max_cost is None:
            return
        price = self.config.prices.get(model.id)
        estimate = 0.0
        if price is not None:
            estimate = (
                estimate_tokens(messages) * price.input + (settings.max_tokens or 0) * price.output
            ) / 1e6
        if self.accounting.cost_usd + estimate > self.max_cost:
            raise BudgetExceededError(
                f"stopping before exceeding --max-cost ${self.max_cost:.2f} "
                f"(spent ${self.accounting.cost_usd:.4f}, next call up to ${estimate:.4f}); "
                "finished work is stored and will not be paid for again"
            )

    def usage_summary(self) -> dict[str, Any]:
        return {model: usage.model_dump() for model, usage in self.accounting.by_model.items()}
