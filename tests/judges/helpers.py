"""Scripted judges for the tests: they read the judge prompt's data blocks like a model would."""

from __future__ import annotations

import json

from livemed.common.prompts import parse_blocks
from livemed.models import Message, Settings
from livemed.models.base import FatalModelError
from livemed.models.fake import FakeModel
from livemed.records import Pair


def responses(messages: list[Message]) -> list[str]:
    return [b.text for b in parse_blocks(messages[-1]["content"]) if b.name == "response"]


def oracle(pairs: list[Pair], name: str = "fake/oracle") -> FakeModel:
    """Prefers each pair's chosen response; pointwise, scores a candidate 10 − its rank."""
    better = {frozenset((p.chosen.text, p.rejected.text)): p.chosen.text for p in pairs}
    score = {c.text: 10 - c.rank for p in pairs for c in (p.chosen, p.rejected)}

    def reply(messages: list[Message], settings: Settings) -> str:
        texts = responses(messages)
        if len(texts) == 1:
            return f"<think>scored</think><score>{score[texts[0]]}</score>"
        slot = "A" if better[frozenset(texts)] == texts[0] else "B"
        return f"<think>the better one</think><answer>[[{slot}]]</answer>"

    return FakeModel(name, function=reply)


def scripted_provider(model_id: str) -> FakeModel:
    """The `fake` provider of CLI tests. fake/dead fails every call. Pair prompts: fake/chatty never
    complies, others prefer B. Grading prompts: fake/yes meets every criterion; others meet one when the
    response shares a word of four or more letters with it."""

    def reply(messages: list[Message], settings: Settings) -> str | BaseException:
        if model_id == "fake/dead":
            return FatalModelError("400 bad request", status=400)
        blocks = {b.name: b.text for b in parse_blocks(messages[-1]["content"])}
        if "criterion" in blocks:
            words = {w for w in blocks["criterion"].lower().split() if len(w) >= 4}
            met = model_id == "fake/yes" or bool(words & set(blocks["response"].lower().split()))
            return json.dumps({"explanation": "scripted", "criteria_met": met})
        if model_id == "fake/chatty":
            return "I think A is better."
        if len(responses(messages)) == 1:
            return "<think>x</think><score>5</score>"
        return "<think>x</think><answer>[[B]]</answer>"

    return FakeModel(model_id, function=reply)
