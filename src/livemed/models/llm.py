"""`LLM`: a model bound to the engine and a stage — what stages receive and call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from livemed.models.base import CallFailure, Completion, Message, Model, Settings
from livemed.models.engine import Engine
from livemed.models.structured import Structured, parse_as, prepare, refused_schema, repair_messages

T = TypeVar("T", bound=BaseModel)


@dataclass
class LLM:
    """Calls `model` through `engine`, accounted under `stage`.

    With `refresh=True` every call skips the cached reply and is sent (its completion replaces the
    cache entry): `dataclasses.replace(llm, refresh=True)` retries exactly the calls made through it.
    """

    engine: Engine
    model: Model
    stage: str = "default"
    refresh: bool = False

    @property
    def id(self) -> str:
        return self.model.id

    async def generate(
        self, messages: list[Message], settings: Settings | None = None
    ) -> Completion | CallFailure:
        return await self.engine.generate(
            self.model, messages, settings, stage=self.stage, refresh=self.refresh
        )

    async def structured(
        self, messages: list[Message], schema: type[T], settings: Settings | None = None
    ) -> Structured[T]:
        """A schema-validated reply, with at most one repair attempt; failures come back as data."""
        settings = settings or Settings()
        use_schema = self.id not in self.engine.schema_refused
        call_messages, call_settings = prepare(self.model, messages, schema, settings, use_schema=use_schema)
        first = await self.generate(call_messages, call_settings)
        if isinstance(first, CallFailure) and call_settings.json_schema and refused_schema(first):
            self.engine.refuse_schema(self.id, first.detail)  # instructed JSON from now on
            call_messages, call_settings = prepare(self.model, messages, schema, settings, use_schema=False)
            first = await self.generate(call_messages, call_settings)
        if isinstance(first, CallFailure):
            return Structured(value=None, failure=f"call failed: {first.detail}", call_failure=first)
        value, reason = parse_as(schema, first.text)
        if value is not None:
            self.engine.count_structured(self.id, first_try=True)
            return Structured(value=value, raw=first.text, completion=first)
        assert reason is not None
        second = await self.generate(
            repair_messages(call_messages, first.text, reason, schema), call_settings
        )
        if isinstance(second, CallFailure):
            self.engine.count_structured(self.id)
            return Structured(
                value=None,
                raw=first.text,
                failure=f"invalid output ({reason}); repair call failed: {second.detail}",
                completion=first,
                call_failure=second,
            )
        value, second_reason = parse_as(schema, second.text)
        self.engine.count_structured(self.id, repaired=value is not None)
        if value is not None:
            return Structured(value=value, raw=second.text, repaired=True, completion=second)
        return Structured(
            value=None,
            raw=second.text,
            failure=f"invalid output after one repair: {second_reason}",
            completion=second,
        )


async def generate_structured(
    model: Model,
    messages: list[Message],
    schema: type[T],
    *,
    engine: Engine | None = None,
    settings: Settings | None = None,
    stage: str = "default",
) -> Structured[T]:
    """One schema-validated reply from `model` (JSON-schema format or instructed JSON, one repair),
    through `engine`, or through a fresh engine closed afterwards when none is given."""
    if engine is not None:
        return await LLM(engine, model, stage).structured(messages, schema, settings)
    async with Engine() as own:
        return await LLM(own, model, stage).structured(messages, schema, settings)


def bind(engine: Engine, model: Model, stage: str) -> LLM:
    return LLM(engine=engine, model=model, stage=stage)
