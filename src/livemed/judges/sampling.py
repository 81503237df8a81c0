"""Stratified, seeded samples of pairs or items (`judges run --limit`, `judges build --limit`).

- Strata: any key of an element, e.g. `pair_stratum` = (dataset, group, tertile); `group` is the MedCalc
  calculator id, MedQA's exam step, PubMedQA's gold decision, one group elsewhere.
- Allocation: the n places are shared out equally over the strata; a stratum with fewer elements than
  its share gives all it has and the rest is shared out again over the others (so n elements are taken
  whenever there are n). Left-over places (n not a multiple) go to the strata first in a seeded order.
- Within a stratum: a seeded shuffle of the elements (sorted by `ident` first, so the order they came
  in does not matter), then spread over clusters (items): every item's first pick before any item's
  second.
- The same elements, n and seed give the same sample on every run; another seed gives another.
- Stored pairs (`stored_sample`): `limit` per dataset, sampled from their stratum fields alone (no
  texts read), then read back in chunks.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from pydantic import TypeAdapter
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from livemed.records import Pair
    from livemed.store import Store

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class PairKey(TypedDict, total=False):
    """The fields of a stored `judge_pair` that the sample needs (read without the texts)."""

    dataset: str
    group: str
    tertile: str | None
    item_id: str


_PAIR_KEY = TypeAdapter(PairKey)
CHUNK = 500  # pairs read back at a time


def pair_stratum(pair: Pair | PairKey) -> tuple[str, str, str]:
    """(dataset, group, tertile or '') of a pair or of its stored fields."""
    if isinstance(pair, dict):
        return pair.get("dataset", ""), pair.get("group", ""), pair.get("tertile") or ""
    return pair.dataset, pair.group, pair.tertile or ""


def interleave(groups: Mapping[str, Sequence[T]], label: str) -> list[T]:
    """Every member of `groups`, in a round-robin over the groups (by name), each group in a seeded order
    (`random.Random(f"{label}:{name}")`): any prefix is a stratified sample."""
    queues = []
    for name in sorted(groups):
        members = list(groups[name])
        random.Random(f"{label}:{name}").shuffle(members)
        queues.append(members)
    out: list[T] = []
    while any(queues):
        out += [queue.pop(0) for queue in queues if queue]
    return out


def allocate(sizes: dict[K, int], n: int, seed: int | str = 0) -> dict[K, int]:
    """How many of each stratum to take: n shared out equally, capped by each stratum's size."""
    take = dict.fromkeys(sizes, 0)
    open_ = sorted(sizes, key=repr)
    random.Random(f"{seed}:allocate").shuffle(open_)
    left = min(n, sum(sizes.values()))
    while left > 0:
        share = max(1, left // len(open_))
        for key in list(open_):
            if left == 0:
                break
            more = min(share, sizes[key] - take[key], left)
            take[key] += more
            left -= more
            if take[key] == sizes[key]:
                open_.remove(key)
    return take


def stratified_sample(
    elements: Iterable[T],
    n: int,
    seed: int | str,
    *,
    key: Callable[[T], K],
    ident: Callable[[T], str],
    cluster: Callable[[T], str] | None = None,
) -> list[T]:
    """n elements (all when fewer), equally over the strata of `key`, seeded; `ident` names each
    element uniquely (its sort order before the shuffle), `cluster` its item (picks spread over items)."""
    strata: dict[K, list[T]] = defaultdict(list)
    for element in elements:
        strata[key(element)].append(element)
    take = allocate({k: len(v) for k, v in strata.items()}, n, seed)
    out: list[T] = []
    for stratum, members in strata.items():
        if take[stratum]:
            out.extend(_spread(members, seed, repr(stratum), ident, cluster)[: take[stratum]])
    return sorted(out, key=ident)


def sample_pairs(pairs: Iterable[Pair], n: int, seed: int | str) -> list[Pair]:
    """n of the pairs, equally over (dataset, group, tertile), seeded, spread over items (in id order)."""
    return stratified_sample(
        pairs, n, seed, key=pair_stratum, ident=lambda p: p.id, cluster=lambda p: f"{p.dataset}:{p.item_id}"
    )


def _spread(
    members: Sequence[T],
    seed: int | str,
    name: str,
    ident: Callable[[T], str],
    cluster: Callable[[T], str] | None,
) -> list[T]:
    """The members in a seeded shuffle, each cluster's first before any cluster's second."""
    order = sorted(members, key=ident)
    random.Random(f"{seed}:sample:{name}").shuffle(order)
    if cluster is None:
        return order
    seen: dict[str, int] = defaultdict(int)
    turns = []
    for element in order:
        turns.append(seen[cluster(element)])
        seen[cluster(element)] += 1
    return [element for _, element in sorted(zip(turns, order, strict=True), key=lambda t: t[0])]


def stored_sample(store: Store, datasets: Sequence[str], limit: int, seed: int) -> list[str]:
    """The ids of `limit` stored pairs per dataset (of `datasets`; all when empty), each dataset's a
    stratified, seeded sample over (group, tertile), spread over items."""
    by_dataset: dict[str, list[tuple[str, PairKey]]] = defaultdict(list)
    for pair_id, fields in store.fields("judge_pair", _PAIR_KEY):
        name = fields.get("dataset", "")
        if not datasets or name in datasets:
            by_dataset[name].append((pair_id, fields))
    chosen: list[str] = []
    for name in sorted(by_dataset):
        picked = stratified_sample(
            by_dataset[name],
            limit,
            f"{seed}:{name}",
            key=lambda kv: pair_stratum(kv[1]),
            ident=lambda kv: kv[0],
            cluster=lambda kv: kv[1].get("item_id", ""),
        )
        chosen.extend(pair_id for pair_id, _ in picked)
    return chosen


def read_pairs(store: Store, ids: Sequence[str]) -> Iterator[Pair]:
    """The stored pairs of `ids`, in that order, `CHUNK` at a time (never all in memory)."""
    from livemed.records import Pair

    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        found = store.get_many(Pair, chunk)
        yield from (found[i] for i in chunk if i in found)
