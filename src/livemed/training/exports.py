"""Preference pairs → training sets in TRL's formats.

- GRPO (`grpo_rows`): one row per pair and slot order, conversational: `prompt` (the judge's system and
  user messages), `gold_verdict` ("A"/"B", read by the reward), and `pair_id`, `order`, `dataset`,
  `family`, `tertile` (TRL passes every column to the reward functions). Pairs are shuffled with the
  seed; the two orders of a pair stay side by side, so each pair gives one gold-A and one gold-B row
  (balanced by construction) and, with TRL's sampler not shuffling, lands in the same batch
  (position-agnostic batches, as J1 does).
- SFT (`distil`): the teacher judge answers every pair in both orders `samples` (Q) times through the
  engine (cached, so a rerun pays nothing twice); a pair is kept only when every sample of both orders
  parses to the gold verdict, and then gives two conversational prompt/completion rows (sample 0 of
  each order). The completion is what the teacher wrote, its reasoning put back inside `<think>…</think>`
  when the endpoint had moved it out. A sample whose call failed is never a verdict: its pair is
  counted under `failed` (with the cause), neither kept nor dropped.

`write_rows` writes a set as JSONL and returns its SHA-256, which the model card records.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from livemed.common.atomic import write_bytes
from livemed.models.base import CallFailure, Completion, Message, Settings
from livemed.training.reward import Parse, verdict_reward

Order = Literal["original", "swapped"]
ORDERS: tuple[Order, Order] = ("original", "swapped")
CHUNK = 64  # pairs in flight at once while distilling (the engine bounds the calls)


class PairLike(Protocol):
    """What the exports read from a preference pair (`livemed.records.judging.Pair`)."""

    @property
    def id(self) -> str: ...

    @property
    def dataset(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def tertile(self) -> str | None: ...

    def slots(self, order: Order = "original") -> tuple[Any, Any, Literal["A", "B"]]: ...


Render = Callable[[Any, Order], list[Message]]


class Generate(Protocol):
    """What `distil` needs of the teacher: `livemed.models.LLM.generate`."""

    async def generate(
        self, messages: list[Message], settings: Settings | None = None
    ) -> Completion | CallFailure: ...


def shuffled(pairs: Sequence[PairLike], seed: int) -> list[PairLike]:
    """The pairs in a seeded order that does not depend on the order they were read in."""
    ordered = sorted(pairs, key=lambda p: p.id)
    random.Random(seed).shuffle(ordered)
    return ordered


def _columns(pair: PairLike, order: Order) -> dict[str, Any]:
    return {
        "gold_verdict": pair.slots(order)[2],
        "pair_id": pair.id,
        "order": order,
        "dataset": pair.dataset,
        "family": pair.family,
        "tertile": pair.tertile or "",
    }


def grpo_rows(pairs: Sequence[PairLike], render: Render, *, seed: int = 0) -> list[dict[str, Any]]:
    """The GRPO set: both orders of every pair, side by side, pairs in a seeded order."""
    return [{"prompt": render(p, o), **_columns(p, o)} for p in shuffled(pairs, seed) for o in ORDERS]


def teacher_output(completion: Completion) -> str:
    """What the teacher wrote, with reasoning the endpoint moved out put back in a `<think>` block."""
    if completion.reasoning and "<think>" not in completion.text:
        return f"<think>\n{completion.reasoning}\n</think>\n{completion.text}"
    return completion.text


@dataclass
class Distilled:
    """The SFT set and what happened to every pair."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0  # the teacher was wrong or invalid in at least one sample
    failed: int = 0  # at least one call failed: asked again on the next run
    causes: Counter[str] = field(default_factory=Counter)

    @property
    def seen(self) -> int:
        return self.kept + self.dropped + self.failed

    def failure_line(self) -> str | None:
        if not self.failed:
            return None
        cause = self.causes.most_common(1)[0][0]
        return f"{self.failed} of {self.seen} pairs' teacher calls failed: {cause}; run again to retry them"


async def _pair_samples(
    teacher: Generate, pair: PairLike, render: Render, settings: Settings, samples: int
) -> dict[Order, list[Completion | CallFailure]]:
    calls = {
        order: [
            teacher.generate(render(pair, order), settings.model_copy(update={"sample": q}))
            for q in range(samples)
        ]
        for order in ORDERS
    }
    results = await asyncio.gather(*(c for order in ORDERS for c in calls[order]))
    return {"original": list(results[:samples]), "swapped": list(results[samples:])}


def _judge_pair(
    out: Distilled,
    pair: PairLike,
    render: Render,
    results: dict[Order, list[Completion | CallFailure]],
    parse: Parse,
) -> None:
    failures = [r for order in ORDERS for r in results[order] if isinstance(r, CallFailure)]
    if failures:
        out.failed += 1
        out.causes[f"{failures[0].reason}: {failures[0].detail[:160]}"] += 1
        return
    texts = {
        order: [teacher_output(r) for r in results[order] if isinstance(r, Completion)] for order in ORDERS
    }
    gold = {order: pair.slots(order)[2] for order in ORDERS}
    if not all(verdict_reward(t, gold[o], parse) == 1.0 for o in ORDERS for t in texts[o]):
        out.dropped += 1
        return
    out.kept += 1
    for order in ORDERS:
        completion = [{"role": "assistant", "content": texts[order][0]}]
        out.rows.append({"prompt": render(pair, order), "completion": completion, **_columns(pair, order)})


async def distil(
    pairs: Sequence[PairLike],
    teacher: Generate,
    render: Render,
    parse: Parse,
    *,
    samples: int = 3,
    settings: Settings | None = None,
    seed: int = 0,
) -> Distilled:
    """The SFT set from a teacher judge (see the module docstring); rows in the seeded pair order."""
    if samples < 1:
        raise ValueError("samples (Q) must be at least 1")
    settings = settings or Settings(temperature=1.0)
    out = Distilled()
    ordered = shuffled(pairs, seed)
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start : start + CHUNK]
        results = await asyncio.gather(*(_pair_samples(teacher, p, render, settings, samples) for p in chunk))
        for pair, result in zip(chunk, results, strict=True):
            _judge_pair(out, pair, render, result, parse)
    return out


@dataclass(frozen=True)
class DataFile:
    path: Path
    sha256: str
    rows: int

    def card(self) -> dict[str, Any]:
        return {"path": str(self.path), "sha256": self.sha256, "rows": self.rows}


def write_rows(rows: Sequence[dict[str, Any]], path: Path) -> DataFile:
    """Write a training set as JSONL (one row a line); returns its path, SHA-256 and row count."""
    data = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows).encode()
    write_bytes(path, data)
    return DataFile(path, hashlib.sha256(data).hexdigest(), len(rows))


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A set written by `write_rows`."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
