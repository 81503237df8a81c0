"""`fake/…` models: scripted responses or a Python function, for tests, examples and docs.

```python
model = FakeModel("fake/judge", responses=['{"criteria_met": true, "explanation": "ok"}'])
model = FakeModel("fake/echo", function=lambda messages, settings: messages[-1]["content"])
```
A scripted item may be a string, a `Completion`, or an exception to raise (for example a
`TransientModelError` to exercise retries). Every call is recorded in `calls`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from livemed.models.base import Completion, FatalModelError, Message, Settings

Reply = str | Completion | BaseException
Function = Callable[[list[Message], Settings], Reply | Awaitable[Reply]]


@dataclass
class FakeModel:
    """A scripted, in-process model that speaks the `Model` protocol."""

    name: str = "fake/model"
    responses: Iterable[Reply] = ()
    function: Function | None = None
    default: Reply | None = None
    latency_s: float = 0.0
    json_schema_support: bool = True
    calls: list[tuple[list[Message], Settings]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._script = iter(list(self.responses))

    @property
    def id(self) -> str:
        return self.name if "/" in self.name else f"fake/{self.name}"

    @property
    def endpoint(self) -> str:
        return "in-process"

    @property
    def supports_json_schema(self) -> bool:
        return self.json_schema_support

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        self.calls.append((list(messages), settings))
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        reply = await self._next(messages, settings)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Completion):
            return reply
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        return Completion(
            text=reply,
            finish_reason="stop",
            prompt_tokens=prompt_tokens,
            completion_tokens=len(reply.split()),
            latency_s=self.latency_s,
            model=self.id,
        )

    async def _next(self, messages: list[Message], settings: Settings) -> Reply:
        if self.function is not None:
            result = self.function(messages, settings)
            return await result if isinstance(result, Awaitable) else result
        scripted = next(self._script, None)
        if scripted is not None:
            return scripted
        if self.default is not None:
            return self.default
        raise FatalModelError(f"{self.id}: its script is exhausted after {len(self.calls) - 1} call(s)")
