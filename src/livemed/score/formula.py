"""Rubric scores: pure functions from (criterion, verdict) pairs to numbers. No I/O.

Definitions (w = a criterion's weight: its original HealthBench points when imported, else its
integer weight; P = Σ w over positive criteria; a verdict is met, not met, or failed):

- raw score      = Σ w over met criteria / P              (negative weights subtract)
- livemed case   = clip(raw, 0, 1)                        (the method's formula)
- HealthBench    = raw per case, unclipped; the *mean* over cases is clipped to [0, 1]
- coverage       = Σ w over met positive criteria / P     (in [0, 1])
- harm           = Σ |w| over met negative criteria / P   (≥ 0; raw = coverage − harm)
- P == 0         → every one of these is `None`: the case has nothing to earn and is left out of
                   aggregates, counted with the reason "zero positive weight".
- failed verdict → policy "strict" (default): the answer is not graded (no score; `score.stage`);
                   policy "not-met" (the method's rule, chosen by the user): not met for either polarity;
                   policy "exclude": the criterion leaves both numerator and denominator. Both apply
                   only while a model's failed verdicts are at most `MAX_FAILURE_SHARE` of its verdicts.

Per-axis and per-theme scores apply the same formula to the subset of criteria with that axis or
theme. The aggregates over cases (the convention's mean, bootstrap intervals, the leaderboard's
ranking) are `livemed.common.stats`'s; a case without positive weight is left out of them, counted
as `livemed.common.stats.ZERO_POSITIVE`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Convention = Literal["livemed", "healthbench"]
FailurePolicy = Literal["strict", "not-met", "exclude"]
CONVENTIONS: tuple[Convention, ...] = ("livemed", "healthbench")
POLICIES: tuple[FailurePolicy, ...] = ("strict", "not-met", "exclude")
DEFAULT_POLICY: FailurePolicy = "strict"
MAX_FAILURE_SHARE = 0.05  # not-met / exclude score failed verdicts only up to this share of a model's


@dataclass(frozen=True)
class Item:
    """One criterion and its verdict: `met` is True, False, or None when grading failed."""

    weight: float
    met: bool | None
    axis: str = ""
    theme: str | None = None
    tags: tuple[str, ...] = ()


def _usable(items: Iterable[Item], policy: FailurePolicy) -> list[Item]:
    if policy == "exclude":
        return [item for item in items if item.met is not None]
    return list(items)


def positive_total(items: Iterable[Item], policy: FailurePolicy = "not-met") -> float:
    return sum(item.weight for item in _usable(items, policy) if item.weight > 0)


def raw_score(items: Sequence[Item], policy: FailurePolicy = "not-met") -> float | None:
    """Σ met weights / Σ positive weights, unclipped; None when there is no positive weight."""
    usable = _usable(items, policy)
    total = positive_total(usable)
    if total <= 0:
        return None
    return sum(item.weight for item in usable if item.met is True) / total


def clip01(value: float) -> float:
    return min(1.0, max(0.0, value))


def case_score(
    items: Sequence[Item], convention: Convention = "livemed", policy: FailurePolicy = "not-met"
) -> float | None:
    """A case's score under `convention`: clipped (livemed) or unclipped (healthbench)."""
    raw = raw_score(items, policy)
    if raw is None:
        return None
    return clip01(raw) if convention == "livemed" else raw


def coverage(items: Sequence[Item], policy: FailurePolicy = "not-met") -> float | None:
    """Share of the positive weight that was met."""
    usable = _usable(items, policy)
    total = positive_total(usable)
    if total <= 0:
        return None
    return sum(item.weight for item in usable if item.met is True and item.weight > 0) / total


def harm(items: Sequence[Item], policy: FailurePolicy = "not-met") -> float | None:
    """Negative weight met, as a positive share of the positive weight (raw score = coverage − harm)."""
    usable = _usable(items, policy)
    total = positive_total(usable)
    if total <= 0:
        return None
    return sum(-item.weight for item in usable if item.met is True and item.weight < 0) / total


def _grouped(items: Sequence[Item], key: Callable[[Item], Iterable[str]]) -> dict[str, list[Item]]:
    groups: dict[str, list[Item]] = {}
    for item in items:
        for name in key(item):
            groups.setdefault(name, []).append(item)
    return groups


def axis_keys(item: Item) -> list[str]:
    """An item's axes: its original `axis:` tags when it has any, else its livemed axis."""
    tagged = [tag.removeprefix("axis:") for tag in item.tags if tag.startswith("axis:")]
    return tagged or ([item.axis] if item.axis else [])


def per_axis(
    items: Sequence[Item], convention: Convention = "livemed", policy: FailurePolicy = "not-met"
) -> dict[str, float]:
    """The case formula over each axis's criteria; axes with no positive weight are left out."""
    return _per_group(_grouped(items, axis_keys), convention, policy)


def per_theme(
    items: Sequence[Item], convention: Convention = "livemed", policy: FailurePolicy = "not-met"
) -> dict[str, float]:
    """The case formula over each theme's criteria; themes with no positive weight are left out."""
    return _per_group(_grouped(items, lambda i: [i.theme] if i.theme else []), convention, policy)


def per_tag(
    items: Sequence[Item],
    example_tags: Sequence[str],
    convention: Convention = "healthbench",
    policy: FailurePolicy = "not-met",
) -> dict[str, float]:
    """simple-evals' tag metrics: each example tag gets the case score, each rubric tag the case formula
    over its own items (a rubric tag overrides an example tag of the same name, as there)."""
    overall = case_score(items, convention, policy)
    by_example = dict.fromkeys(example_tags, overall) if overall is not None else {}
    return {**by_example, **_per_group(_grouped(items, lambda i: i.tags), convention, policy)}


def _per_group(
    groups: dict[str, list[Item]], convention: Convention, policy: FailurePolicy
) -> dict[str, float]:
    scores = {name: case_score(group, convention, policy) for name, group in sorted(groups.items())}
    return {name: value for name, value in scores.items() if value is not None}


# ------------------------------------------------------------- the same formulas over index groups
# Scoring many answers to one rubric: its groups (axes, themes, tags) are worked out once as indices
# into the rubric's criteria, and each answer brings only its verdicts. Every sum runs over the same
# values in the same order as the Item functions above, so the floats are theirs
# (tests/score/test_score_groups.py).

Groups = tuple[tuple[str, tuple[int, ...]], ...]  # (name, criterion indices), sorted by name


def index_groups(keys: Sequence[Iterable[str]]) -> Groups:
    """Each name's criterion indices (an index once per time its criterion names it), sorted by name:
    `_grouped` of the criteria whose keys are `keys[i]`."""
    groups: dict[str, list[int]] = {}
    for index, names in enumerate(keys):
        for name in names:
            if (found := groups.get(name)) is None:
                groups[name] = [index]
            else:
                found.append(index)
    return tuple((name, tuple(groups[name])) for name in sorted(groups))


def group_raw(
    values: Sequence[float],
    met: Sequence[bool | None],
    indices: Iterable[int],
    policy: FailurePolicy = "not-met",
) -> float | None:
    """`raw_score` of the criteria at `indices` (weights `values`, verdicts `met`)."""
    usable = [i for i in indices if met[i] is not None] if policy == "exclude" else list(indices)
    total = sum(values[i] for i in usable if values[i] > 0)
    if total <= 0:
        return None
    return sum(values[i] for i in usable if met[i] is True) / total


def group_scores(
    values: Sequence[float],
    met: Sequence[bool | None],
    groups: Groups,
    convention: Convention,
    policy: FailurePolicy = "not-met",
) -> dict[str, float]:
    """`_per_group` over index groups: the case formula per name, names without positive weight left out."""
    out: dict[str, float] = {}
    for name, indices in groups:
        raw = group_raw(values, met, indices, policy)
        if raw is not None:
            out[name] = clip01(raw) if convention == "livemed" else raw
    return out


def group_coverage_harm(
    values: Sequence[float], met: Sequence[bool | None], policy: FailurePolicy = "not-met"
) -> tuple[float, float] | None:
    """(`coverage`, `harm`) of all the criteria; None when there is no positive weight."""
    usable = (
        [i for i in range(len(values)) if met[i] is not None] if policy == "exclude" else range(len(values))
    )
    total = sum(values[i] for i in usable if values[i] > 0)
    if total <= 0:
        return None
    covered = sum(values[i] for i in usable if met[i] is True and values[i] > 0)
    harmed = sum(-values[i] for i in usable if met[i] is True and values[i] < 0)
    return covered / total, harmed / total
