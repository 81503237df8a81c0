"""The call engine: every LLM call in livemed goes through `Engine.generate`.

It owns, per model: a concurrency limit, request- and token-rate limits, a per-call timeout,
bounded retries with exponential backoff and jitter that honour Retry-After, the response cache
(in the store), and accounting of calls, tokens and cost per model and per stage. A call that
cannot succeed returns a `CallFailure`; it never raises for a per-item problem and never turns
an error into text. Only `BudgetExceededError` stops a run.

```python
async with Engine(store=store, config=config, max_cost=5.0) as engine:   # aclose() flushes the cache
    engine.observers.append(print)                                        # EngineEvent per step
    out = await engine.generate(model, messages, Settings(temperature=0), stage="grade")
```
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter, defaultdict
from types import TracebackType
from typing import TYPE_CHECKING, Any

from livemed.config import Config, ModelConfig
from livemed.models.accounting import (
    Accounting,
    Compliance,
    EngineEvent,
    EventKind,
    Observer,
    cost_of,
    log,
    notify,
)
from livemed.models.base import (
    CallFailure,
    Completion,
    FatalModelError,
    Message,
    Model,
    NoTextError,
    NotSentError,
    Settings,
    TransientModelError,
)
from livemed.models.budget import FREE_PROVIDERS, Budget
from livemed.models.cache import CacheMode, ResponseCache
from livemed.models.limits import (
    BACKOFF_BASE_S,
    BACKOFF_MAX_S,
    ModelLimits,
    backoff_delay,
    estimate_tokens,
)
from livemed.models.window import Window
from livemed.records import Usage

if TYPE_CHECKING:
    from livemed.store import Store

__all__ = [
    "Accounting",
    "CacheMode",
    "Engine",
    "EngineEvent",
    "Observer",
    "backoff_delay",
    "cache_key",
    "estimate_tokens",
]


def cache_key(model: Model, messages: list[Message], settings: Settings) -> str:
    """Hash of provider, model, endpoint, messages, every sampling setting and the sample index: the
    sha256 of `json.dumps(material, sort_keys=True, ensure_ascii=False)` of `{"model", "endpoint",
    "messages", "settings", "extra_body"}`, written part by part in that text's own key order so the
    settings' part (with a grader's JSON schema, the largest) is made once per Settings object; the
    same bytes as dumping the whole (tests/models/test_engine.py)."""
    text = "".join(
        (
            '{"endpoint": ',
            _key_json(model.endpoint),
            ', "extra_body": ',
            _key_json(getattr(model, "extra_body", None) or {}),  # provider options change the reply too
            ', "messages": ',
            _key_json(messages),
            ', "model": ',
            _key_json(model.id),
            ', "settings": ',
            _settings_json(settings),
            "}",
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()


_key_json = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode  # what the key's dumps makes
_SETTINGS_JSON: dict[int, tuple[Settings, str]] = {}  # id -> (the object, kept alive; its key text)


def _settings_json(settings: Settings) -> str:
    """`settings.model_dump(mode="json")` as the cache key writes it, once per Settings object (they
    are frozen; the same few objects make most calls: a stage's settings, the grader's with its schema)."""
    found = _SETTINGS_JSON.get(id(settings))
    if found is not None and found[0] is settings:
        return found[1]
    if len(_SETTINGS_JSON) >= 1024:  # many distinct objects (a sample index each): start again
        _SETTINGS_JSON.clear()
    dumped = _key_json(settings.model_dump(mode="json"))
    _SETTINGS_JSON[id(settings)] = (settings, dumped)
    return dumped


def named(model_id: str, detail: str) -> str:
    """`model: detail`, once: a model's own errors already start with its id."""
    return detail if detail.startswith(f"{model_id}: ") else f"{model_id}: {detail}"


class _Disabled(Exception):
    """The model was disabled (refused key, unknown model) while a call waited for its turn."""


class Engine(Budget):
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
        self.cache = ResponseCache(store, cache)
        self.cache_mode: CacheMode = self.cache.mode
        self.max_cost = max_cost
        self.accounting = Accounting()
        # model -> [valid first try, repaired, total]; see compliance_of()
        self.compliance: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        self.observers: list[Observer] = []
        self.events: Counter[str] = Counter()  # EngineEvent kinds seen so far
        self.backoff_base_s = BACKOFF_BASE_S
        self.backoff_max_s = BACKOFF_MAX_S
        self._limits: dict[str, ModelLimits] = {}
        self._models: dict[str, Model] = {}
        self._reserved_usd = 0.0
        self._reservations = 0  # calls holding a reservation (floats never sum back to exactly 0)
        self._budget_stop: str | None = None
        self._budget_changed: tuple[asyncio.AbstractEventLoop, asyncio.Condition] | None = None
        self._unpriced_warned: set[str] = set()
        self.schema_refused: set[str] = set()  # models whose endpoint refused the JSON-schema format
        self._in_flight: dict[str, asyncio.Future[Completion | CallFailure]] = {}  # cache key -> its call

    # ------------------------------------------------------------------ public

    async def generate(
        self,
        model: Model,
        messages: list[Message],
        settings: Settings | None = None,
        *,
        stage: str = "default",
        refresh: bool = False,
    ) -> Completion | CallFailure:
        """One call: cache, then limits and retries; a `CallFailure` when it cannot succeed.

        `refresh=True` skips the cached reply (the call is sent; its completion replaces the entry).
        Only completions with text are cached: a failure, including a reply without text, is asked
        again by the next run. With the cache on, a call whose key is already being asked waits for
        that call and takes its completion as a cache hit (the same request is never paid twice at
        once); if that call fails, it is asked on its own.
        """
        settings = settings or Settings()
        key = cache_key(model, messages, settings)
        payload = None if refresh else await self.cache.get(key)
        if payload is not None:
            completion = (
                Completion.model_validate_json(payload)
                if isinstance(payload, str)
                else Completion.model_validate(payload)
            )
            completion.cached = True
            self._record("cache_hit", stage, model.id, cache_hits=1)
            return completion
        if not self.cache.writable or refresh:
            return await self._generate(model, messages, settings, stage, key)
        loop = asyncio.get_running_loop()
        while (flight := self._in_flight.get(key)) is not None and flight.get_loop() is loop:
            await asyncio.wait([flight])  # never cancelled with it: the other caller's call may stop
            shared = None if flight.cancelled() else flight.result()
            if isinstance(shared, Completion):
                self._record("cache_hit", stage, model.id, cache_hits=1)
                return shared.model_copy(update={"cached": True})
        flight = loop.create_future()
        self._in_flight[key] = flight
        try:
            result = await self._generate(model, messages, settings, stage, key)
        except BaseException:
            flight.cancel()
            raise
        finally:
            if self._in_flight.get(key) is flight:
                del self._in_flight[key]
        flight.set_result(result)
        return result

    async def _generate(
        self, model: Model, messages: list[Message], settings: Settings, stage: str, key: str
    ) -> Completion | CallFailure:
        """The call itself, past the cache: limits, budget, retries; a completion is cached."""
        if self.cache_mode == "read-only":
            self._record("failure", stage, model.id, "cache miss", failures=1)
            return CallFailure(
                model=model.id, reason="cache_miss", detail="not in the cache (--cache-read-only)"
            )
        limits = self._limits_for(model)
        if limits.disabled is not None:
            self._record("failure", stage, model.id, limits.disabled, failures=1)
            return CallFailure(model=model.id, reason="fatal", detail=limits.disabled)
        reserved = await self._reserve_budget(model, messages, settings, limits)
        try:
            result = await self._call_with_retries(model, messages, settings, stage, limits)
        finally:
            await self._release_budget(reserved)
        if isinstance(result, Completion):
            # A paid reply is written in the next event-loop turn (with the others that returned in
            # the same turn), so a kill loses almost none; free models' replies are batched.
            paid = not model.id.startswith(FREE_PROVIDERS)
            self.cache.put(key, model.id, result.model_dump_json(), soon=paid)  # its JSON text, once
        return result

    def limits(self, model: Model) -> ModelConfig:
        return self.config.model_settings(model.id)

    def window_of(self, model: Model) -> Window:
        """How many calls of `model` this engine lets out at once now, on the running event loop."""
        return self._limits_for(model).window

    def flush(self) -> int:
        """Write buffered cache entries to the store now; returns how many."""
        return self.cache.flush()

    async def aclose(self) -> None:
        """Flush the cache and close the models' HTTP connections; call once the work is done."""
        self.flush()
        for model in self._models.values():
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def finished(self) -> int:
        """`generate()` calls that have returned (completions, cache hits and failures)."""
        return self.events["completion"] + self.events["cache_hit"] + self.events["failure"]

    def compliance_of(self, model_id: str) -> Compliance:
        """Structured-output compliance of one model so far."""
        return Compliance.from_counts(self.compliance.get(model_id, [0, 0, 0]))

    def count_structured(self, model_id: str, *, first_try: bool = False, repaired: bool = False) -> None:
        """Count one structured call for compliance (used by `LLM.structured`)."""
        counts = self.compliance[model_id]
        counts[0] += first_try
        counts[1] += repaired
        counts[2] += 1

    def refuse_schema(self, model_id: str, detail: str) -> None:
        """Remember that `model_id`'s endpoint refused the JSON-schema response format (warned once)."""
        if model_id not in self.schema_refused:
            self.schema_refused.add(model_id)
            log.warning(
                "%s refused the JSON-schema response format (%s); using instructed JSON instead "
                "(set json_schema = false for it in livemed.toml to skip the refused call)",
                model_id,
                detail[:200],
            )

    def disabled_models(self) -> dict[str, str]:
        """Models whose calls are no longer sent (after a refused key, a missing key or an unknown model)."""
        return {model: limits.disabled for model, limits in self._limits.items() if limits.disabled}

    def usage_summary(self) -> dict[str, Any]:
        return {model: usage.model_dump() for model, usage in self.accounting.by_model.items()}

    # ------------------------------------------------------------------ calls

    def _limits_for(self, model: Model) -> ModelLimits:
        limits = self._limits.get(model.id)
        if limits is None:
            limits = self._limits[model.id] = ModelLimits.from_config(self.config.model_settings(model.id))
            limits.key = model.id  # the shared rate limit (`limits.SHARED_RATE`) is per model id
            self._models[model.id] = model
        return limits.for_loop(asyncio.get_running_loop())

    async def _call_with_retries(
        self, model: Model, messages: list[Message], settings: Settings, stage: str, limits: ModelLimits
    ) -> Completion | CallFailure:
        attempts = limits.config.max_retries + 1
        last: TransientModelError | TimeoutError | None = None
        estimate = estimate_tokens(messages)  # the prompt's, once for every attempt and the bill
        sent = 0
        for attempt in range(attempts):
            sent = attempt + 1
            try:
                completion = await self._attempt(model, messages, settings, limits, estimate)
            except _Disabled as exc:  # disabled while this call waited for a slot: it is not sent
                self._record("failure", stage, model.id, str(exc), failures=1)
                return CallFailure(model=model.id, reason="fatal", detail=str(exc), attempts=attempt)
            except FatalModelError as exc:
                return self._fatal(model, stage, limits, exc, attempt + 1)
            except NoTextError as exc:
                limits.failures_in_row = 0  # a reply came: the endpoint answers
                return self._no_text(model, stage, estimate, limits, exc, attempt + 1)
            except (TransientModelError, TimeoutError) as exc:
                last = exc
                if limits.disabled is not None:  # another request stopped the model: not retried
                    break
                if attempt + 1 < attempts:
                    delay = backoff_delay(
                        attempt,
                        getattr(exc, "retry_after", None),
                        base=self.backoff_base_s,
                        cap=self.backoff_max_s,
                    )
                    self._record("retry", stage, model.id, str(exc), calls=1, retries=1)
                    log.debug(
                        "%s: attempt %d failed (%s); retrying in %.2f s", model.id, attempt + 1, exc, delay
                    )
                    await asyncio.sleep(delay)
                continue
            limits.failures_in_row = 0
            billed = self._billed(model, estimate, limits, completion)
            self._record("completion", stage, model.id, "", **billed)
            return completion
        if last is not None:
            self._failed_request(model, limits, last)
        detail = limits.disabled or f"gave up after {attempts} attempt(s): {last or 'no attempt made'}"
        self._record("failure", stage, model.id, detail, calls=1, failures=1)
        log.info("%s", named(model.id, detail))
        return CallFailure(
            model=model.id,
            reason=getattr(last, "reason", None) or "retries_exhausted",
            detail=detail,
            status=getattr(last, "status", None),
            attempts=sent,
        )

    def _failed_request(self, model: Model, limits: ModelLimits, exc: Exception) -> bool:
        """Count a request that failed after its retries (a 429 aside: the endpoint answers, asking to
        wait), so a short outage that retries ride out counts nothing; after `max_consecutive_failures`
        such requests in a row the model's later calls are not sent (`limits.disabled`, one warning).
        True when its calls are stopped."""
        if limits.disabled is not None:
            return True
        if getattr(exc, "status", None) == 429:
            return False
        limits.failures_in_row += 1
        most = limits.config.max_consecutive_failures
        if limits.failures_in_row < most:
            return False
        cause = str(exc).removeprefix(f"{model.id}: ")
        limits.disabled = f"stopped after {most} consecutive failures from {model.endpoint}: {cause}"
        log.warning("%s", named(model.id, limits.disabled))
        return True

    def _fatal(
        self, model: Model, stage: str, limits: ModelLimits, exc: FatalModelError, attempts: int
    ) -> CallFailure:
        """A failure not worth retrying. One that was never sent (a missing key) counts no call and no
        attempt, and is not logged as a warning: the command's failure line reports it, once."""
        detail = str(exc)
        sent = not isinstance(exc, NotSentError)
        if sent and exc.status is not None:
            limits.failures_in_row = 0  # an HTTP answer (a 400, say): the endpoint answers
        if exc.model_wide and limits.disabled is None:
            limits.disabled = f"{detail} (later calls to {model.id} are not sent)"
            if sent:
                log.warning("%s; later calls to it are not sent", named(model.id, detail))
        self._record("failure", stage, model.id, detail, calls=int(sent), failures=1)
        log.info("%s", named(model.id, detail))
        return CallFailure(
            model=model.id,
            reason=exc.reason or "fatal",
            detail=detail,
            status=exc.status,
            attempts=attempts if sent else attempts - 1,
        )

    def _no_text(
        self,
        model: Model,
        stage: str,
        prompt_estimate: int,
        limits: ModelLimits,
        exc: NoTextError,
        attempts: int,
    ) -> CallFailure:
        """A reply without text: a failure (not cached, asked again next run) that was still billed."""
        detail = str(exc)
        billed = (
            self._billed(model, prompt_estimate, limits, exc.completion) if exc.completion else {"calls": 1}
        )
        self._record("failure", stage, model.id, detail, failures=1, **billed)
        log.info("%s", named(model.id, detail))
        raw = exc.completion.reasoning if exc.completion else ""
        return CallFailure(
            model=model.id,
            reason=exc.reason,
            detail=detail,
            attempts=attempts,
            raw_text=raw,
            reply=exc.completion,
        )

    def _billed(
        self, model: Model, prompt_estimate: int, limits: ModelLimits, completion: Completion
    ) -> dict[str, float]:
        """The accounting counts of one answered call (tokens, cost, whether the usage is estimated)."""
        limits.learn(prompt_estimate, completion.prompt_tokens, completion.completion_tokens)
        return {
            "calls": 1,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost_usd": cost_of(
                self.config, model.id, completion.prompt_tokens, completion.completion_tokens
            ),
            "estimated_calls": int(completion.usage_estimated),
        }

    async def _attempt(
        self, model: Model, messages: list[Message], settings: Settings, limits: ModelLimits, estimate: int
    ) -> Completion:
        window = limits.window
        round_ = await window.enter()
        try:
            if limits.disabled is not None:  # disabled while this call waited for its turn: not sent
                raise _Disabled(limits.disabled)
            if limits.rated:  # without rate limits there is nothing to wait for
                await limits.acquire_rate(estimate + self._output_estimate(settings, limits))
            if limits.disabled is not None:
                raise _Disabled(limits.disabled)
            started = time.perf_counter()
            timeout = limits.config.timeout_s
            try:
                async with asyncio.timeout(timeout):  # no task of its own per call, unlike wait_for
                    completion = await model.generate(messages, settings=settings)
            except TimeoutError:
                raise TimeoutError(f"{model.id}: no answer within {timeout:g} s") from None
            except TransientModelError as exc:
                if exc.status == 429 and window.refused(round_):
                    log.info("%s", named(model.id, f"429: {int(window.size)} call(s) in flight at most now"))
                raise
            window.served(round_)
            if not completion.latency_s:
                completion.latency_s = time.perf_counter() - started
            if not completion.text.strip():  # any model: an empty reply is no answer
                raise NoTextError(
                    f"{model.id}: no text in the reply (finish_reason {completion.finish_reason or 'none'})",
                    reason="truncated" if completion.finish_reason == "length" else "no_text",
                    completion=completion,
                )
            return completion
        finally:
            window.leave()

    def _record(self, kind: EventKind, stage: str, model: str, detail: str = "", **counts: float) -> None:
        self.accounting.add(stage, model, **counts)
        self.events[kind] += 1
        if self.observers:
            usage = Usage.model_validate(counts)
            notify(
                self.observers, EngineEvent(kind=kind, model=model, stage=stage, usage=usage, detail=detail)
            )
