"""Real `Pair` records for the training tests, and a scripted teacher judge."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from livemed.common.prompts import parse_blocks
from livemed.jsonl import write_jsonl
from livemed.models import LLM, CallFailure, Completion, Engine, Message, Model, Settings
from livemed.models.fake import FakeModel
from livemed.records import Candidate, Pair
from livemed.store import Store
from livemed.training.judging import render


def make_pair(i: int, *, dataset: str = "medqa", gold: str = "A", item: str | None = None) -> Pair:
    chosen = Candidate(id="gold", text=f"Rationale {i}. Answer: B", answer="B", metric=1.0)
    rejected = Candidate(id="option:C", text=f"Rationale {i}. Answer: C", answer="C", metric=0.0, rank=1)
    return Pair(
        dataset=dataset,
        family="atomic" if dataset != "medcalc" else "decomposable",
        item_id=item or f"q{i}",
        question=f"Question {i}: which drug?\n\nOptions:\nA. one\nB. two\nC. three",
        instruction="Choose the single best option.",
        chosen=chosen,
        rejected=rejected,
        gold=gold,
        rank_gap=1,
        tertile=None if dataset != "medcalc" else "hard",
        licence="MIT",
    )


def make_pairs(n: int) -> list[Pair]:
    return [make_pair(i, gold="A" if i % 2 else "B") for i in range(n)]


def write_pairs(pairs: list[Pair], path: Path) -> Path:
    write_jsonl(pairs, path)
    return path


_ANSWER = re.compile(r"Answer: (\S+)")


def right_slot(messages: list[Message]) -> str:
    """The slot whose response answers B (the chosen candidate in `make_pair`)."""
    blocks = [b for b in parse_blocks(messages[1]["content"]) if b.name == "response"]
    for block in blocks:
        found = _ANSWER.search(block.text)
        if found and found.group(1) == "B":
            return block.attrs["slot"]
    raise AssertionError("no chosen response in the prompt")


def teacher(model_id: str = "fake/teacher", *, wrong_on: frozenset[str] = frozenset()) -> FakeModel:
    """A teacher that picks the right slot, except on the samples named in `wrong_on` ("q3:1")."""

    def reply(messages: list[Message], settings: Settings) -> str:
        slot = right_slot(messages)
        question = parse_blocks(messages[1]["content"])[0].text.split(":")[0].split()[-1]
        if f"q{question}:{settings.sample}" in wrong_on:
            slot = "B" if slot == "A" else "A"
        return f"<think>Response {slot} picks the right option.</think><answer>[[{slot}]]</answer>"

    return FakeModel(model_id, function=reply)


def judge_all(model: Model, store: Store | None, settings: Settings) -> list[Completion | CallFailure]:
    async def go() -> list[Completion | CallFailure]:
        async with Engine(store=store) as engine:
            llm = LLM(engine, model, stage="judges")
            prompts = [render(p, "original") for p in make_pairs(6)]
            return list(await asyncio.gather(*(llm.generate(m, settings) for m in prompts)))

    return asyncio.run(go())
