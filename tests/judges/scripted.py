"""Scripted judges of known behaviour as verdict records (no model): always-A, right with p = 0.8,
10 % non-compliant, position-biased; over made-up pairs of several items, tertiles and datasets."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from livemed.records import JudgeVerdict

Choose = Callable[[random.Random, str, str], "str | None"]  # (rng, order, gold) -> slot, or None


@dataclass(frozen=True)
class FakePair:
    pair_id: str
    dataset: str
    tertile: str | None
    gold: str  # the gold slot in the original order


def pairs(dataset: str, items: int, per_item: int, seed: int = 0) -> list[FakePair]:
    rng = random.Random(seed)
    decomposable = dataset in ("pico", "medcalc")
    tertiles = ("hard", "medium", "easy")
    return [
        FakePair(
            f"pair:{dataset}:{i}:gold>m{j}",
            dataset,
            tertiles[j % 3] if decomposable else None,
            rng.choice("AB"),
        )
        for i in range(items)
        for j in range(per_item)
    ]


def _other(slot: str) -> str:
    return "B" if slot == "A" else "A"


def always_a(rng: random.Random, order: str, gold: str) -> str | None:
    return "A"


def right(p: float) -> Choose:
    return lambda rng, order, gold: gold if rng.random() < p else _other(gold)


def non_compliant(share: float, p: float = 0.8) -> Choose:
    inner = right(p)
    return lambda rng, order, gold: None if rng.random() < share else inner(rng, order, gold)


def position_biased(rng: random.Random, order: str, gold: str) -> str | None:
    return "A" if rng.random() < 0.7 else gold


JUDGES: dict[str, Choose] = {
    "fake/always-a": always_a,
    "fake/right-0.8": right(0.8),
    "fake/noncompliant-0.1": non_compliant(0.1),
    "fake/position-biased": position_biased,
}


def verdicts(
    judge: str, chosen: list[FakePair], k: int, choose: Choose, mode: str = "pairwise", seed: int = 0
) -> list[JudgeVerdict]:
    rng = random.Random(f"{judge}:{seed}")
    orders = ("original", "swapped") if mode == "pairwise" else ("original",)
    out = []
    for pair in chosen:
        for order in orders:
            gold = pair.gold if order == "original" else _other(pair.gold)
            for sample in range(k):
                out.append(
                    JudgeVerdict(
                        pair_id=pair.pair_id,
                        dataset=pair.dataset,
                        family="decomposable" if pair.dataset in ("pico", "medcalc") else "atomic",
                        tertile=pair.tertile,
                        judge=judge,
                        mode=mode,
                        order=order,
                        sample=sample,
                        gold=gold,
                        verdict=choose(rng, order, gold),
                    )
                )
    return out
