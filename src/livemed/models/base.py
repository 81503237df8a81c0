"""The model vocabulary: messages, sampling settings, completions, the `Model` protocol and the base of
the offline baselines (`OfflineBaseline`).

A `Model` only knows how to talk to one endpoint. Everything else a call needs — concurrency,
rate limits, retries, the response cache, accounting — lives in one place, `livemed.models.engine`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from livemed.errors import ModelError

FailureReason = Literal[
    "fatal",
    "retries_exhausted",
    "budget",
    "cache_miss",
    "invalid_output",
    "truncated",  # no text: the reply ran out of tokens (finish_reason "length")
    "no_text",  # no usable text: content null or empty, tool calls only, only reasoning
    "provider_error",  # the endpoint answered, but with an error from the provider behind it
]
NoTextReason = Literal["truncated", "no_text"]


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


class Settings(BaseModel):
    """Sampling settings; every field is part of the cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: tuple[str, ...] = ()
    n: int = Field(default=1, ge=1)
    top_p: float | None = Field(default=None, gt=0, le=1)
    json_schema: dict[str, Any] | None = Field(default=None, description="request JSON-schema output")
    sample: int = Field(
        default=0, ge=0, description="sample index: distinct samples get distinct cache entries"
    )


class Completion(BaseModel):
    """What one successful call returned."""

    model_config = ConfigDict(extra="forbid")

    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = Field(
        default=False, description="the endpoint sent no usage: tokens are estimated from the text"
    )
    reasoning: str = Field(
        default="", description="reasoning kept out of `text` (think blocks, reasoning fields)"
    )
    latency_s: float = 0.0
    model: str
    raw: dict[str, Any] = Field(default_factory=dict)
    cached: bool = False
    choices: list[str] = Field(default_factory=list, description="all choice texts when n > 1")


class CallFailure(BaseModel):
    """A call that did not produce a completion; never turned into answer text."""

    model_config = ConfigDict(extra="forbid")

    model: str
    reason: FailureReason
    detail: str
    status: int | None = None
    attempts: int = 0
    raw_text: str = ""
    reply: Completion | None = Field(
        default=None, description="no_text / truncated: the reply that came (for callers that count it)"
    )


@runtime_checkable
class Model(Protocol):
    """One endpoint. `generate` raises `TransientModelError` or `FatalModelError` on failure.

    A model that holds connections may also define `async aclose()`; `Engine.aclose()` calls it.
    """

    @property
    def id(self) -> str: ...

    @property
    def endpoint(self) -> str:
        """Where calls go (a base URL, or a label for in-process models); part of the cache key."""
        ...

    @property
    def supports_json_schema(self) -> bool: ...

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion: ...


class TransientModelError(ModelError):
    """A failure worth retrying (429, 5xx, timeout, connection error); may carry Retry-After seconds.

    `reason` names the `CallFailure` reason when retries run out (default "retries_exhausted").
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        reason: FailureReason | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.reason = reason


class FatalModelError(ModelError):
    """A failure not worth retrying (400/401/403/404, bad configuration).

    `model_wide` marks failures that every later call to the same model would repeat (a refused or
    missing API key, an unknown model): the engine then fails those calls without sending them.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        model_wide: bool = False,
        reason: FailureReason | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.model_wide = model_wide
        self.reason = reason


class NotSentError(FatalModelError):
    """A fatal failure found before any request left (a missing API key): model-wide, and no call
    is counted for it (nothing was sent, nothing attempted)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, model_wide=True)


class NoTextError(ModelError):
    """The endpoint answered, but with no usable text (`reason` "truncated" or "no_text").

    Not retried within the run (at temperature 0 the same request gets the same reply) and never
    cached, so the next run asks again. `completion` carries what the reply was billed, for accounting.
    """

    def __init__(self, message: str, *, reason: NoTextReason, completion: Completion | None = None) -> None:
        super().__init__(message)
        self.reason: NoTextReason = reason
        self.completion = completion


class OfflineBaseline:
    """Base of the no-LLM baselines: a `Model` in name (for the registry), records in practice."""

    name = "baseline"

    @property
    def id(self) -> str:
        return f"offline/{self.name}"

    @property
    def endpoint(self) -> str:
        return "offline"

    @property
    def supports_json_schema(self) -> bool:
        return False

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        raise FatalModelError(
            f"{self.id} is an offline baseline that works on records, not chat messages; "
            "use it with the commands that accept it (answer, grade, rubrics)"
        )
