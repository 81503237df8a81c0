"""Stratified, seeded samples: equal shares over strata, the same sample under a seed, another under
another seed, spread over items; `judges build --limit` and `judges run --limit` on real MedCalc."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from livemed.cli.judges_commands import count_pairs, select_pairs
from livemed.judges.pairs import build_pairs
from livemed.judges.sampling import allocate, sample_pairs, stratified_sample
from livemed.records import JudgeVerdict, Pair
from livemed.store import Store
from tests.judges.test_cli import run
from tests.judges.test_pairs import PICO

Element = tuple[str, str, int]  # (id, stratum, item)
ELEMENTS: list[Element] = [
    (f"e{i:03}", s, i // 4) for s, size in (("a", 40), ("b", 3), ("c", 57)) for i in range(size)
]


def _sample(n: int, seed: int) -> list[Element]:
    return stratified_sample(ELEMENTS, n, seed, key=lambda e: e[1], ident=lambda e: f"{e[1]}{e[0]}")


def test_allocation_is_equal_over_strata_and_a_small_stratum_gives_what_it_has() -> None:
    take = allocate({"a": 40, "b": 3, "c": 57}, 30)
    assert take["b"] == 3
    assert sorted((take["a"], take["c"])) == [13, 14]
    assert allocate({"a": 40, "b": 3, "c": 57}, 9) == {"a": 3, "b": 3, "c": 3}
    assert allocate({"a": 2, "b": 3}, 50) == {"a": 2, "b": 3}
    assert sum(allocate({k: 5 for k in "abcdefg"}, 4).values()) == 4


def test_sample_is_the_same_under_a_seed_and_another_under_another_seed() -> None:
    first = _sample(30, 0)
    assert len(first) == 30
    assert Counter(e[1] for e in first)["b"] == 3
    assert first == _sample(30, 0)
    assert first == stratified_sample(
        list(reversed(ELEMENTS)), 30, 0, key=lambda e: e[1], ident=lambda e: f"{e[1]}{e[0]}"
    )  # the order the elements come in does not matter
    assert first != _sample(30, 1)
    assert len(_sample(500, 0)) == len(ELEMENTS)


def test_picks_spread_over_items_before_a_second_from_one() -> None:
    picked = stratified_sample(
        [e for e in ELEMENTS if e[1] == "c"],
        14,
        5,
        key=lambda e: e[1],
        ident=lambda e: e[0],
        cluster=lambda e: str(e[2]),
    )
    assert len({e[2] for e in picked}) == 14  # 15 items of up to 4 elements: 14 picks, 14 items


def test_sample_pairs_balances_tertiles_and_items() -> None:
    items = [replace(PICO, item_id=str(i)) for i in range(4)]
    pairs = list(build_pairs(items, 0, "MIT"))
    picked = sample_pairs(pairs, 12, 0)
    assert Counter(p.tertile for p in picked) == {"hard": 4, "medium": 4, "easy": 4}
    assert Counter(p.item_id for p in picked) == dict.fromkeys("0123", 3)
    assert picked == sample_pairs(list(reversed(pairs)), 12, 0)


@pytest.fixture(scope="module")
def medcalc_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import shared_data_dir

    data = shared_data_dir() / "medcalc_bench"
    if not data.is_dir():
        pytest.skip(f"real data folder {data} is absent (set LIVEMED_SHARED_DATA)")
    store = tmp_path_factory.mktemp("medcalc") / "s.db"
    assert "medcalc: 1047 items" in run(store, "judges", "build", "--dataset", "medcalc", "--path", str(data))
    return store


@pytest.mark.shared_data
def test_run_limit_is_stratified_over_calculators_and_tertiles(medcalc_store: Path) -> None:
    text = run(
        medcalc_store,
        "judges",
        "run",
        "--judge",
        "offline/always-a",
        "--dataset",
        "medcalc",
        "--limit",
        "200",
    )
    assert "400" in text  # 200 pairs in two orders
    with Store(medcalc_store) as s:
        ids = sorted({v.pair_id for v in s.iter(JudgeVerdict)})
        pairs = list(s.get_many(Pair, ids).values())
    assert len(pairs) == 200
    assert len({p.group for p in pairs}) == 55  # every calculator (alphabetical ids gave 6 items of one)
    assert len({p.item_id for p in pairs}) >= 150
    tertiles = Counter(p.tertile for p in pairs)
    assert max(tertiles.values()) - min(tertiles.values()) <= 10, tertiles


@pytest.mark.shared_data
def test_run_limit_sample_is_fixed_by_its_seed(medcalc_store: Path) -> None:
    with Store(medcalc_store) as s:
        first = [p.id for p in select_pairs(s, ["medcalc"], 200, 0)]
        again = [p.id for p in select_pairs(s, ["medcalc"], 200, 0)]
        other = [p.id for p in select_pairs(s, ["medcalc"], 200, 1)]
        assert count_pairs(s, ["medcalc"], 200) == 200
    assert first == again
    assert len(set(first)) == 200
    assert len(set(first) & set(other)) < 40


@pytest.mark.shared_data
def test_build_limit_samples_items_across_calculators(tmp_path: Path, shared_data: Path) -> None:
    path = str(shared_data / "medcalc_bench")
    groups: list[set[tuple[str, str]]] = []
    for seed in ("0", "0", "1"):
        store = tmp_path / f"s{len(groups)}.db"
        text = run(
            store, "judges", "build", "--dataset", "medcalc", "--path", path, "--limit", "55", "--seed", seed
        )
        assert "medcalc: 55 items" in text
        with Store(store) as s:
            items = {(p.group, p.item_id) for p in s.iter(Pair)}
        assert len({g for g, _ in items}) == 55  # one item of each calculator, not the first 55 rows
        groups.append(items)
    assert groups[0] == groups[1]
    assert groups[0] != groups[2]
