"""The base of every offline baseline (no LLM): a `Model` in name, for the registry; records in practice.

Answerer baselines (`answer/baselines.py`), grader baselines (`grade/lexical.py`, `judges/baselines.py`)
and the rubric writer's rule baseline (`rubrics/rules.py`) derive from it.
"""

from __future__ import annotations

from livemed.models.base import Completion, FatalModelError, Message, Settings


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
