"""Pairs: same seed ⇒ same pairs; ranks, rank gaps and tertiles (equal-count by default, equal-width as
an option); balanced slots; both orders; export."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from livemed.common.prompts import parse_blocks
from livemed.jsonl import read_jsonl
from livemed.judges.datasets.items import ChoiceItem, PicoItem
from livemed.judges.pairs import (
    TERTILES,
    build_pairs,
    card_path,
    count_tertiles,
    export_pairs,
    ranked,
    tertile,
    tertiles_of,
)
from livemed.judges.templates import pairwise_messages, pointwise_messages
from livemed.records import Candidate, Pair

PICO = PicoItem(
    item_id="t1",
    text="Adults with asthma received budesonide or placebo for 12 weeks; the outcome was lung function.",
    spans={"P": ["Adults with asthma"], "I": ["budesonide"], "C": ["placebo"], "O": ["lung function"]},
)
MCQ = ChoiceItem("medqa", "1", "Which drug?", {"A": "aspirin", "B": "heparin", "C": "warfarin"}, "B")


def _cand(cid: str, metric: float) -> Candidate:
    return Candidate(id=cid, text=f"text {cid}", answer=cid, metric=metric)


def test_dense_ranks_share_equal_metrics() -> None:
    out = ranked([_cand("a", 0.5), _cand("b", 1.0), _cand("c", 0.5), _cand("d", 0.0)])
    assert [(c.id, c.rank) for c in out] == [("b", 0), ("a", 1), ("c", 1), ("d", 2)]


def test_tertiles_by_gap_hard_is_smallest() -> None:
    assert [tertile(g, 9) for g in range(1, 10)] == ["hard"] * 3 + ["medium"] * 3 + ["easy"] * 3
    assert [tertile(g, 3) for g in (1, 2, 3)] == ["hard", "medium", "easy"]
    assert tertile(1, 1) == "hard"
    assert [tertile(g, 4) for g in (1, 2, 3, 4)] == ["hard", "hard", "medium", "easy"]


def _sizes(gaps: list[int], bins: Mapping[int, str]) -> list[int]:
    counts = Counter(bins[g] for g in gaps)
    return [counts[t] for t in TERTILES]


def test_count_tertiles_are_equal_thirds_of_the_pairs() -> None:
    nine = list(range(1, 10))  # nine pairs, each its own gap: exactly 3 / 3 / 3
    assert _sizes(nine, count_tertiles(nine)) == [3, 3, 3]
    ranked_item = [1] * 4 + [2] * 3 + [3] * 2 + [4]  # five distinct ranks: 10 pairs, small gaps commonest
    bins = count_tertiles(ranked_item)
    assert bins == {1: "hard", 2: "medium", 3: "easy", 4: "easy"}
    assert _sizes(ranked_item, bins) == [4, 3, 3]
    assert _sizes(ranked_item, tertiles_of(ranked_item, "width")) == [7, 2, 1]  # the old bins


def test_count_tertiles_keep_a_gap_value_whole_and_are_as_equal_as_ties_allow() -> None:
    tied = [1] * 5 + [2] + [3] + [4] * 2  # 9 pairs; the five of gap 1 cannot be split
    bins = count_tertiles(tied)
    assert bins == {1: "hard", 2: "medium", 3: "medium", 4: "easy"}  # 5 / 2 / 2 beats 5 / 1 / 3 and 6 / 1 / 2
    assert count_tertiles([1, 1, 2]) == {1: "hard", 2: "easy"}  # two gap values: Hard and Easy
    assert count_tertiles([1, 1]) == {1: "hard"}
    assert count_tertiles([]) == {}


def test_count_tertiles_no_single_move_of_a_cut_makes_them_more_equal() -> None:
    rng = random.Random(3)
    for _ in range(200):
        gaps = [rng.randint(1, rng.randint(3, 9)) for _ in range(rng.randint(3, 40))]
        bins = count_tertiles(gaps)
        values = sorted(set(gaps))
        order = [TERTILES.index(bins[v]) for v in values]
        assert order == sorted(order)  # smaller gaps never in an easier tertile
        if len(values) >= 3:
            assert set(order) == {0, 1, 2}
        spread = sum((3 * c - len(gaps)) ** 2 for c in _sizes(gaps, bins))
        for i, value in enumerate(values):  # move one gap value into the neighbouring tertile
            for step in (-1, 1):
                moved = dict(bins)
                moved[value] = TERTILES[min(2, max(0, order[i] + step))]
                again = [TERTILES.index(moved[v]) for v in values]
                if again != sorted(again) or (len(values) >= 3 and set(again) != {0, 1, 2}):
                    continue
                assert sum((3 * c - len(gaps)) ** 2 for c in _sizes(gaps, moved)) >= spread


def test_width_tertiles_are_the_old_equal_width_bins() -> None:
    gaps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    assert tertiles_of(gaps, "width") == {g: tertile(g, 9) for g in set(gaps)}
    wide = list(build_pairs([PICO], 0, "MIT", tertiles="width"))
    largest = max(p.rank_gap for p in wide)
    assert all(p.tertile == tertile(p.rank_gap, largest) for p in wide)
    assert wide[0].provenance.settings["tertiles"] == "width"
    counted = list(build_pairs([PICO], 0, "MIT"))
    assert [p.id for p in counted] == [p.id for p in wide]
    assert counted[0].provenance.settings["tertiles"] == "count"


def test_same_seed_same_pairs_and_another_seed_differs() -> None:
    first = [p.model_dump(exclude={"provenance"}) for p in build_pairs([PICO, MCQ], 7, "MIT")]
    again = [p.model_dump(exclude={"provenance"}) for p in build_pairs([PICO, MCQ], 7, "MIT")]
    other = [p.model_dump(exclude={"provenance"}) for p in build_pairs([PICO, MCQ], 8, "MIT")]
    assert first == again
    assert first != other


def test_pairs_rank_chosen_above_rejected_with_gold_slot_balanced() -> None:
    pairs = list(build_pairs([PICO] * 3, 1, "MIT"))
    assert pairs
    for pair in pairs:
        assert pair.chosen.rank < pair.rejected.rank
        assert pair.chosen.metric > pair.rejected.metric
        assert pair.rank_gap == pair.rejected.rank - pair.chosen.rank
        assert pair.tertile in ("hard", "medium", "easy")
        assert pair.chosen.operators
        assert pair.rejected.operators
    gold = Counter(p.gold for p in pairs)
    assert abs(gold["A"] - gold["B"]) <= 1


def test_atomic_pairs_are_gold_against_each_wrong_option() -> None:
    pairs = list(build_pairs([MCQ], 0, "MIT"))
    assert sorted(p.rejected.answer for p in pairs) == ["A", "C"]
    assert {p.chosen.answer for p in pairs} == {"B"}
    assert all(p.tertile is None and p.family == "atomic" for p in pairs)
    assert "Answer: B" in pairs[0].chosen.text
    assert "heparin" in pairs[0].chosen.text


def test_swapped_order_moves_the_gold_slot() -> None:
    pair = next(iter(build_pairs([MCQ], 0, "MIT")))
    a, b, gold = pair.slots("original")
    a2, b2, gold2 = pair.slots("swapped")
    assert (a2, b2) == (b, a)
    assert gold2 != gold
    assert (a if gold == "A" else b) == pair.chosen


def test_pairwise_messages_put_outside_text_in_data_blocks() -> None:
    pair = next(iter(build_pairs([MCQ], 0, "MIT")))
    user = pairwise_messages(pair, "swapped")[1]["content"]
    blocks = parse_blocks(user)
    a, b, _ = pair.slots("swapped")
    assert [blk.name for blk in blocks] == ["source", "response", "response"]
    assert blocks[1].text == a.text
    assert blocks[2].text == b.text
    assert "<answer>[[A]]</answer>" in user
    point = pointwise_messages(pair, pair.rejected)[1]["content"]
    assert parse_blocks(point)[1].text == pair.rejected.text
    assert "<score>" in point


def test_export_writes_records_and_a_data_card(tmp_path: Path) -> None:
    pairs = list(build_pairs([MCQ], 0, "CC BY-SA 4.0 (share-alike)"))
    out = tmp_path / "pairs.jsonl"
    card = export_pairs(pairs, out)
    loaded = read_jsonl(out)
    assert not loaded.errors
    assert all(isinstance(r, Pair) for r in loaded.records)
    assert [r.id for r in loaded.records] == [p.id for p in pairs]
    data = json.loads(card_path(out).read_text())
    assert data["pairs"] == {"medqa": 2}
    assert data["share_alike"] == ["medqa"]
    assert "CC BY-SA 4.0" in data["note"]
    assert card.gold.total() == 2
