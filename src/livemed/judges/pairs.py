"""Preference pairs from ranked candidates, balanced slots, rank-gap tertiles, and the JSONL export.

- Rank: an item's candidates by their metric (best first), dense ranks (equal metrics share a rank).
- Pair: every two candidates of different rank; chosen = the better one; `rank_gap` = the difference.
  Atomic tasks (choices) give gold vs each wrong option.
- Tertile (decomposable tasks only), per item (`tertiles`): `count` (default, the paper's) cuts the
  item's pairs, sorted by gap, into three runs as equal in count as ties allow — a gap value is never
  split, so the cut points fall between gap values: the pair of cuts with the least
  Σ (3·count − n)², each third non-empty when the item has ≥ 3 gap values, and among equally good cuts
  the one with Hard and Easy closest in size, then the earliest. Smallest gaps Hard, then Medium, then
  Easy; two gap values: Hard and Easy; one: Hard. `width` (the old rule): with G the item's largest
  gap, tertile index = (gap − 1) · 3 // G → 0 Hard, 1 Medium, 2 Easy.
- Slots: each item's pairs in a seeded shuffle, the gold slot alternating A, B, A, … over the whole
  stream (so every dataset is balanced within one pair, and each item too); `Pair.slots("swapped")`
  gives the other order.
- Export: one `judge_pair` record per line (the format `livemed export` writes; `livemed import` reads
  it back), plus a data card (`<file>.card.json`) with counts and each source's licence.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from livemed.common.atomic import write_text, writing_text
from livemed.jsonl import dump_line
from livemed.judges.datasets import DATASETS, Item, item_group
from livemed.judges.mutations import candidates as make_candidates
from livemed.judges.templates import instruction, source_text
from livemed.records import Candidate, Pair, Provenance
from livemed.records.judging import Tertile

TERTILES: tuple[Tertile, ...] = ("hard", "medium", "easy")
FEW_GAPS: dict[int, tuple[Tertile, ...]] = {0: (), 1: ("hard",), 2: ("hard", "easy")}
TertileRule = Literal["count", "width"]
TERTILE_RULES: tuple[TertileRule, ...] = ("count", "width")
SHARE_ALIKE = "CC BY-SA 4.0"


def ranked(cands: list[Candidate]) -> list[Candidate]:
    """Candidates best first with dense ranks (0 = best)."""
    if not cands:
        return []
    better_high = cands[0].higher_better
    order = sorted(cands, key=lambda c: (-c.metric if better_high else c.metric, c.id))
    out, rank, last = [], -1, None
    for cand in order:
        if cand.metric != last:
            rank, last = rank + 1, cand.metric
        out.append(cand.model_copy(update={"rank": rank}))
    return out


def tertile(gap: int, largest: int) -> Tertile:
    """The `width` rule: equal-width bins of the gaps 1…largest."""
    return TERTILES[min(2, (gap - 1) * 3 // max(largest, 1))]


def width_tertiles(gaps: Sequence[int]) -> dict[int, Tertile]:
    largest = max(gaps, default=1)
    return {gap: tertile(gap, largest) for gap in set(gaps)}


def count_tertiles(gaps: Sequence[int]) -> dict[int, Tertile]:
    """The `count` rule: each gap value's tertile, the thirds as equal in count as ties allow."""
    counts = Counter(gaps)
    values = sorted(counts)
    if len(values) < 3:
        return dict(zip(values, FEW_GAPS[len(values)], strict=True))
    sizes = [counts[v] for v in values]
    n = len(gaps)

    def badness(cuts: tuple[int, int]) -> tuple[int, int, tuple[int, int]]:
        hard, medium = sum(sizes[: cuts[0]]), sum(sizes[cuts[0] : cuts[1]])
        easy = n - hard - medium
        return sum((3 * c - n) ** 2 for c in (hard, medium, easy)), abs(hard - easy), cuts

    first, second = min(combinations(range(1, len(values)), 2), key=badness)
    return {v: TERTILES[(i >= first) + (i >= second)] for i, v in enumerate(values)}


def tertiles_of(gaps: Sequence[int], rule: TertileRule = "count") -> dict[int, Tertile]:
    """Each gap value's tertile under `rule` (`count` or `width`)."""
    return count_tertiles(gaps) if rule == "count" else width_tertiles(gaps)


@dataclass
class Balancer:
    """The running gold-slot alternation of one build (A, B, A, …)."""

    count: int = 0

    def next(self) -> str:
        slot = "A" if self.count % 2 == 0 else "B"
        self.count += 1
        return slot


def item_pairs(
    item: Item,
    seed: int,
    balancer: Balancer,
    licence: str,
    stats: Counter[str] | None = None,
    tertiles: TertileRule = "count",
) -> list[Pair]:
    """The pairs of one item (candidates made, ranked and paired; slots from `balancer`; tertiles by
    `tertiles`); `stats` counts items, candidates and pairs."""
    info = DATASETS[item.dataset]
    cands = ranked(make_candidates(item, seed))
    couples = [(a, b) for a, b in combinations(cands, 2) if a.rank != b.rank]
    if info.family == "atomic":
        couples = [(a, b) for a, b in couples if a.rank == 0]
    random.Random(f"{seed}:slots:{item.dataset}:{item.item_id}").shuffle(couples)
    bins = tertiles_of([b.rank - a.rank for a, b in couples], tertiles)
    question, task = source_text(item), instruction(item.dataset)
    settings: dict[str, Any] = {"seed": seed, "builder": "livemed.judges.pairs"}
    if info.family == "decomposable":
        settings["tertiles"] = tertiles
    provenance = Provenance(settings=settings)
    if stats is not None:
        stats.update(items=1, candidates=len(cands), pairs=len(couples))
    return [
        Pair(
            dataset=item.dataset,
            family=info.family,
            item_id=item.item_id,
            group=item_group(item),
            question=question,
            instruction=task,
            chosen=a,
            rejected=b,
            gold="A" if balancer.next() == "A" else "B",
            rank_gap=b.rank - a.rank,
            tertile=bins[b.rank - a.rank] if info.family == "decomposable" else None,
            seed=seed,
            licence=licence,
            provenance=provenance,
        )
        for a, b in couples
    ]


def build_pairs(
    items: Iterable[Item],
    seed: int,
    licence: str,
    stats: Counter[str] | None = None,
    tertiles: TertileRule = "count",
) -> Iterator[Pair]:
    """Pairs of every item, streamed (one item's candidates in memory at a time)."""
    balancer = Balancer()
    for item in items:
        yield from item_pairs(item, seed, balancer, licence, stats, tertiles)


@dataclass
class DataCard:
    """Counts and licences of an export."""

    pairs: Counter[str] = field(default_factory=Counter)
    licences: dict[str, str] = field(default_factory=dict)
    tertiles: Counter[str] = field(default_factory=Counter)
    gold: Counter[str] = field(default_factory=Counter)

    def add(self, pair: Pair) -> None:
        self.pairs[pair.dataset] += 1
        self.licences[pair.dataset] = pair.licence
        self.tertiles[f"{pair.dataset}:{pair.tertile or 'atomic'}"] += 1
        self.gold[pair.gold] += 1

    def as_dict(self) -> dict[str, Any]:
        share_alike = sorted(d for d, lic in self.licences.items() if SHARE_ALIKE in lic)
        return {
            "format": "livemed judge_pair records, one JSON object per line (livemed import reads them)",
            "made_by": "livemed judges build: deterministic, seeded mutations of benchmark items",
            "pairs": dict(self.pairs),
            "licences": self.licences,
            "share_alike": share_alike,
            "note": (
                f"pairs from {', '.join(share_alike)} are {SHARE_ALIKE}: redistribute them under the "
                "same licence, with attribution to MedCalc-Bench (Khandekar et al., 2024)"
                if share_alike
                else ""
            ),
            "tertiles": dict(self.tertiles),
            "gold_slots": dict(self.gold),
        }


def export_pairs(pairs: Iterable[Pair], path: Path) -> DataCard:
    """Write the pairs as JSONL and the data card beside them (`<path>.card.json`)."""
    card = DataCard()
    with writing_text(path) as handle:
        for pair in pairs:
            handle.write(dump_line(pair) + "\n")
            card.add(pair)
    write_text(card_path(path), json.dumps(card.as_dict(), indent=2) + "\n")
    return card


def card_path(path: Path) -> Path:
    return path.with_name(path.name + ".card.json")
