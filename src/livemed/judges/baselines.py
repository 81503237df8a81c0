"""Offline baseline judges (no model; labelled `offline/…`), so the tables exist without an LLM.

They speak the `Model` protocol and answer the judge prompts of `templates.py`, reading them back by
their data blocks, so their calls go through the engine like any judge's:
- `offline/always-a` always prefers slot A (pointwise: always 5): position bias made visible.
- `offline/lexical-overlap` prefers the response whose words overlap most with the source text
  (pointwise: 10 × the share of the response's words found in the source)."""

from __future__ import annotations

import re

from livemed.common.prompts import parse_blocks
from livemed.models import Completion, Message, Settings
from livemed.models.base import OfflineBaseline

_WORDS = re.compile(r"[a-z0-9]+")


def overlap(response: str, source: str) -> float:
    """The share of the response's distinct words that appear in the source."""
    words = set(_WORDS.findall(response.lower()))
    return len(words & set(_WORDS.findall(source.lower()))) / len(words) if words else 0.0


class _Baseline(OfflineBaseline):
    """A judge baseline: unlike the answer baselines, it does answer the (judge) messages."""

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        del settings
        blocks = parse_blocks(messages[-1]["content"])
        source = next((b.text for b in blocks if b.name == "source"), "")
        responses = [b for b in blocks if b.name == "response"]
        text = self.reply(source, [b.text for b in responses])
        return Completion(text=text, finish_reason="stop", model=self.id)

    def reply(self, source: str, responses: list[str]) -> str:
        raise NotImplementedError


class AlwaysA(_Baseline):
    name = "always-a"

    def reply(self, source: str, responses: list[str]) -> str:
        if len(responses) == 1:
            return "<think>Baseline: every response gets the same score.</think><score>5</score>"
        return "<think>Baseline: always prefers slot A.</think><answer>[[A]]</answer>"


class LexicalOverlap(_Baseline):
    name = "lexical-overlap"

    def reply(self, source: str, responses: list[str]) -> str:
        shares = [overlap(r, source) for r in responses]
        if len(shares) == 1:
            score = f"{10 * shares[0]:.1f}"
            return f"<think>Word overlap with the source: {shares[0]:.2f}.</think><score>{score}</score>"
        slot = "A" if shares[0] >= shares[1] else "B"
        return f"<think>Word overlap A {shares[0]:.2f}, B {shares[1]:.2f}.</think><answer>[[{slot}]]</answer>"


BASELINES: dict[str, type[_Baseline]] = {f"offline/{cls.name}": cls for cls in (AlwaysA, LexicalOverlap)}
