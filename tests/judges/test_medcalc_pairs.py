"""MedCalc pairs on the real data: equal-count tertiles on a real item and over the set, and pairs from
the items whose gold value is 0 (additive errors)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from livemed.errors import InputFileError
from livemed.judges.datasets import CalcItem, dataset
from livemed.judges.mutations import candidates
from livemed.judges.pairs import TERTILES, build_pairs

pytestmark = pytest.mark.shared_data


def _items(shared_data: Path) -> dict[str, CalcItem]:
    loaded = dataset("medcalc").load(shared_data / "medcalc_bench")
    return {i.item_id: i for i in loaded if isinstance(i, CalcItem) and not isinstance(i, InputFileError)}


def test_a_real_item_splits_into_thirds_as_equal_as_ties_allow(shared_data: Path) -> None:
    item = _items(shared_data)["1"]  # Cockcroft-Gault, 10 candidates of distinct ranks: 45 pairs
    pairs = list(build_pairs([item], 0, "CC BY-SA 4.0"))
    gaps = Counter(p.rank_gap for p in pairs)
    assert sorted(gaps.items()) == [(g, 10 - g) for g in range(1, 10)]
    by_gap = {p.rank_gap: p.tertile for p in pairs}
    assert by_gap == {1: "hard", 2: "hard", 3: "medium", 4: "medium"} | dict.fromkeys(range(5, 10), "easy")
    assert Counter(p.tertile for p in pairs) == {"hard": 17, "medium": 13, "easy": 15}  # of 15 each
    wide = Counter(p.tertile for p in build_pairs([item], 0, "CC BY-SA 4.0", tertiles="width"))
    assert wide == {"hard": 24, "medium": 15, "easy": 6}  # the old equal-width bins


def test_tertiles_over_all_medcalc_pairs_are_near_thirds(shared_data: Path) -> None:
    pairs = list(build_pairs(_items(shared_data).values(), 0, "CC BY-SA 4.0"))
    shares = Counter(p.tertile for p in pairs)
    assert all(0.30 < shares[t] / len(pairs) < 0.37 for t in TERTILES), shares
    per_item: dict[str, set[int]] = {}
    for pair in pairs:
        per_item.setdefault(pair.item_id, set()).add(pair.rank_gap)
        assert pair.group
    with_easy = {p.item_id for p in pairs if p.tertile == "easy"}
    assert with_easy == set(per_item)  # every item has an Easy third (68 had none with equal widths)


def test_zero_valued_items_make_pairs_from_additive_errors(shared_data: Path) -> None:
    items = _items(shared_data)
    zero = [i for i in items.values() if i.output_type == "decimal" and float(i.answer) == 0]
    assert len(zero) == 21
    assert {i.calculator_id for i in zero} == {8, 46, 63, 64, 66}
    wells = items["122"]  # Wells' criteria for PE, gold 0
    made = {c.answer: c.operators for c in candidates(wells, 0)}
    assert made == {
        "0": ["gold"],
        "0.5": ["additive_error:+0.5"],
        "1": ["additive_error:+1"],
        "2.5": ["additive_error:+2.5"],
        "5": ["additive_error:+5"],
    }
    pairs = list(build_pairs(zero, 0, "CC BY-SA 4.0"))
    assert {p.item_id for p in pairs} == {i.item_id for i in zero}
    assert all(p.chosen.metric < p.rejected.metric for p in pairs)
    assert {p.chosen.answer for p in pairs if p.chosen.id == "gold"} == {"0"}
    gap = next(c for c in candidates(items["731"], 0) if c.id != "gold")  # delta gap: may be negative
    assert gap.operators[0].startswith("additive_error:")
    assert any(float(c.answer) < 0 for c in candidates(items["731"], 0))
