"""The certification battery of `judges certify` (docs/judges.md, "Validity cards"): its pairs, length
probes and rubric items, what it costs in calls, the trivial graders' answers on it, and the card's
parts (`livemed.judges.certification`). Nothing here reads the CLI or the environment."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from livemed.grade.grader import Judge, Mode
from livemed.judges.cards import battery_pairs, length_probe, probe_pairs
from livemed.judges.rubric_validation import ItemOutcome, Probe, battery_items, grade_items, select_items
from livemed.models import LLM, Engine
from livemed.records import Case, JudgeVerdict, Pair, Rubric

PROBE_PAIRS = 50  # pairs whose worse response is padded (the length probe), both orders
RUBRIC_ITEMS = 400  # the rubric part's items at most: ~100 per axis of four, ±0.05 over all axes
RUBRIC_TRIVIAL = ("always-met", "never-met", "random", "offline/lexical")
PAIR_TRIVIAL = ("offline/always-a", "offline/lexical-overlap")


@dataclass
class Battery:
    """What one certification asks: pairs (both orders), probe pairs, and rubric items over cases."""

    pairs: list[Pair] = field(default_factory=list)
    probes: list[Pair] = field(default_factory=list)  # padded copies (`cards.length_probe`)
    cases: dict[str, tuple[Case, Rubric]] = field(default_factory=dict)
    items: list[Probe] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # datasets not found

    def calls(self, samples: int, mode: str) -> dict[str, int]:
        """Calls a model grader makes: both orders × k per pair and probe; per item × k (per-criterion)
        or per distinct text of a case × k (batched)."""
        texts = {(p.case_id, p.text) for p in self.items}
        rubric = len(self.items) if mode != "batched" else len(texts)
        return {
            "pairs": 2 * samples * len(self.pairs),
            "probes": 2 * samples * len(self.probes),
            "rubric": samples * rubric,
        }

    def plan(self, samples: int, mode: str, offline: bool) -> str:
        """The line printed before the battery runs: its size per stratum and its calls."""
        datasets = Counter(p.dataset for p in self.pairs)
        axes = Counter(p.criterion.axis for p in self.items)
        calls = self.calls(samples, mode)
        if offline:
            calls = dict.fromkeys(calls, 0)
        parts = []
        if self.pairs:
            each = ", ".join(f"{d} {n}" for d, n in sorted(datasets.items()))
            parts.append(
                f"{len(self.pairs)} pairs ({each}) in both orders and {len(self.probes)} length probes "
                f"× {samples} sample(s) = {calls['pairs'] + calls['probes']:,} calls"
            )
        if self.items:
            each = ", ".join(f"{a} {n}" for a, n in sorted(axes.items()))
            parts.append(
                f"{len(self.items)} rubric items ({each}) over {len(self.cases)} cases, {mode} "
                f"× {samples} sample(s) = {calls['rubric']:,} calls"
            )
        total = "offline: no model calls" if offline else f"{sum(calls.values()):,} calls in all"
        return "battery: " + "; ".join(parts or ["empty"]) + f"; {total}"


def make_battery(
    cases: list[tuple[Case, Rubric]],
    data: Any,
    *,
    seed: int,
    per_dataset: int | None,
    items: int = RUBRIC_ITEMS,
    probes: int = PROBE_PAIRS,
    with_pairs: bool = True,
) -> Battery:
    """The battery: pairs from `data` (None: the bundled PICO set only when `with_pairs`), a seeded
    sample of them padded for the length probe, and up to `items` rubric items over `cases`."""
    battery = Battery(cases={case.id: (case, rubric) for case, rubric in cases})
    if with_pairs:
        battery.pairs, battery.missing = battery_pairs(data, seed, per_dataset)
        battery.probes = length_probe(probe_pairs(battery.pairs, seed, probes))
    found = [p for case, rubric in cases for p in battery_items(case, rubric)]
    battery.items = select_items(found, items, seed)
    return battery


async def rubric_outcomes(battery: Battery, judge: Judge, mode: Mode, samples: int) -> list[ItemOutcome]:
    return await grade_items(battery.cases, battery.items, judge, mode, samples)


async def rubric_trivial(battery: Battery, seed: int) -> dict[str, list[ItemOutcome]]:
    """The trivial graders' outcomes on the same items: always met, never met, a seeded coin, and
    `offline/lexical` (word matching), one sample each."""
    from livemed.grade.lexical import LexicalGrader

    rng = random.Random(f"{seed}:random-grader")
    out = {
        "always-met": [ItemOutcome(p, [True]) for p in battery.items],
        "never-met": [ItemOutcome(p, [False]) for p in battery.items],
        "random": [ItemOutcome(p, [rng.random() < 0.5]) for p in battery.items],
    }
    out["offline/lexical"] = await grade_items(
        battery.cases, battery.items, LexicalGrader(), "per-criterion", 1
    )
    return out


async def judge_in_memory(
    pairs: list[Pair], llm: LLM, samples: int, temperature: float
) -> tuple[list[JudgeVerdict], list[str]]:
    """Every job of the pairs asked, nothing stored: the verdicts and the failed calls' details."""
    from livemed.judges.run import JudgeRun, jobs, judge_job
    from livemed.records import Rejection

    spec = JudgeRun(llm, temperature=temperature)
    gate = asyncio.Semaphore(64)

    async def one(job: Any) -> list[Any]:
        async with gate:
            return await judge_job(job, spec)

    found = await asyncio.gather(*(one(job) for job in jobs(pairs, samples, "pairwise")))
    records = [r for rs in found for r in rs]
    verdicts = [r for r in records if isinstance(r, JudgeVerdict)]
    return verdicts, [r.detail for r in records if isinstance(r, Rejection)]


async def pair_trivial(pairs: list[Pair]) -> dict[str, list[JudgeVerdict]]:
    """The trivial pair judges' verdicts on the same pairs (offline, one sample, nothing stored)."""
    from livemed.judges.baselines import BASELINES

    out = {}
    for name in PAIR_TRIVIAL:
        out[name], _ = await judge_in_memory(pairs, LLM(Engine(), BASELINES[name](), stage="judges"), 1, 0.0)
    return out
