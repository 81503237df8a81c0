"""Per-model limits: concurrency, request and token rates, backoff, and a breaker for dead models."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Protocol

from aiolimiter import AsyncLimiter

from livemed.config import ModelConfig
from livemed.models.base import Message
from livemed.models.window import Window

BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 30.0
RETRY_AFTER_MAX_S = 120.0  # a server asking for a longer wait is waited for this long, then retried


def backoff_delay(
    attempt: int,
    retry_after: float | None = None,
    *,
    base: float = BACKOFF_BASE_S,
    cap: float = BACKOFF_MAX_S,
    retry_after_cap: float = RETRY_AFTER_MAX_S,
) -> float:
    """Seconds before retry `attempt` (0-based).

    With Retry-After: at least that long (capped at `retry_after_cap`), plus up to 10% jitter so that
    calls refused together do not return together. Without: full-jitter exponential backoff up to `cap`.
    """
    if retry_after is not None and retry_after >= 0:
        wait = min(retry_after, retry_after_cap)
        return wait + random.uniform(0, 0.1 * wait)
    return random.uniform(0, min(cap, base * 2**attempt))


def estimate_tokens(messages: list[Message]) -> int:
    """A cheap upper-ish estimate (4 characters per token) for rate limits and budgets."""
    return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)


class SharedRate(Protocol):
    """A request- and token-rate limit shared by several worker processes (one per model id)."""

    async def wait(self, key: str, rpm: float | None, tpm: float | None, tokens: int) -> None: ...


SHARED_RATE: SharedRate | None = None  # set in a worker process whose limits are cluster-wide


@dataclass
class ModelLimits:
    """Live limiters for one model, plus why it is disabled (after a model-wide fatal error)."""

    config: ModelConfig
    window: Window  # calls in flight: max_concurrency, narrowed while the endpoint answers 429
    requests: AsyncLimiter | None
    tokens: AsyncLimiter | None
    disabled: str | None = None
    failures_in_row: int = 0  # failed requests since the last reply (see `Engine._failed_request`)
    largest_completion: int = 0
    prompt_ratio: float = 1.0  # the largest (prompt tokens billed / estimate_tokens) seen so far

    def learn(self, estimated_prompt: int, prompt_tokens: int, completion_tokens: int) -> None:
        """Remember what calls really cost, so that budget estimates stay on the safe side."""
        self.largest_completion = max(self.largest_completion, completion_tokens)
        if estimated_prompt > 0:
            self.prompt_ratio = max(self.prompt_ratio, prompt_tokens / estimated_prompt)

    loop: asyncio.AbstractEventLoop | None = None
    key: str = ""  # the model id (set by the engine): the shared rate limit's key

    @classmethod
    def from_config(cls, config: ModelConfig) -> ModelLimits:
        rpm, tpm = config.requests_per_minute, config.tokens_per_minute
        return cls(
            config=config,
            window=Window(config.max_concurrency),
            requests=_limiter(rpm) if rpm else None,
            tokens=_limiter(tpm) if tpm else None,
        )

    def for_loop(self, loop: asyncio.AbstractEventLoop) -> ModelLimits:
        """These limits for `loop`: asyncio primitives belong to one loop, so a new loop gets fresh ones."""
        if self.loop is not loop:
            fresh = ModelLimits.from_config(self.config)
            self.window, self.requests, self.tokens = fresh.window, fresh.requests, fresh.tokens
            self.loop = loop
        return self

    @property
    def rated(self) -> bool:
        """Whether calls wait for a rate window (requests or tokens per minute set; a shared one
        is used only with these set too)."""
        return self.requests is not None or self.tokens is not None

    async def acquire_rate(self, estimated_tokens: int) -> None:
        """Wait for a request slot and for `estimated_tokens` of token budget in the rate windows
        (those of every worker together when `SHARED_RATE` is set: `livemed.cli.executors`)."""
        rpm, tpm = self.config.requests_per_minute, self.config.tokens_per_minute
        if SHARED_RATE is not None and (rpm or tpm):
            await SHARED_RATE.wait(self.key, rpm, tpm, estimated_tokens)
            return
        if self.requests is not None:
            await self.requests.acquire()
        if self.tokens is not None:
            await self.tokens.acquire(min(float(estimated_tokens), self.tokens.max_rate))


def _limiter(per_minute: float) -> AsyncLimiter:
    """A leaky bucket for `per_minute` that bursts at most a tenth of a minute's worth (at least 1)."""
    capacity = max(1.0, per_minute / 10)
    return AsyncLimiter(capacity, capacity * 60 / per_minute)


# Kept for code written against the first sketch of the engine.
