"""A meta-evaluation figure with its n and 95% interval (docs/judges.md, "Every figure with its n").

A figure is the mean of per-unit values (a game's score, a sample's invalid flag, a pair's
consistency). Units of one item cluster (the pairs of an item, both orders of a pair, the k samples of a
game), so the interval is a percentile bootstrap over items: items are drawn with replacement and the
figure recomputed from their units (`RESAMPLES` times, seeded by the figure's key). Where every item
gives one 0/1 unit, the figure is a plain proportion and its interval is Wilson's
(`livemed.common.closed_form.proportion`). A mean over datasets (a family, an average, a tertile mean)
takes the unweighted mean of its parts' values and of their bootstrap draws; it is "n too small" when
any part is. A figure over fewer than `MIN_N` units is "n too small": shown so, never as a bare number.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np
from numpy.typing import NDArray

from livemed.common.closed_form import proportion
from livemed.common.stats import MIN_N, cluster_bootstrap

RESAMPLES = 2000
SEED = 0
SMALL = "n too small"
WILSON = "wilson"
BOOTSTRAP = "bootstrap over items"
MEAN = "mean over datasets (bootstrap over items in each)"


@dataclass(frozen=True)
class Figure:
    """A value (None: no units), its 95% interval (None: not computable), the units behind it."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    unit: str = "games"
    items: int = 0
    method: str = ""
    parts: int = 0  # datasets averaged (0: one cell)
    small_part: bool = False
    draws: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    @property
    def small(self) -> bool:
        return self.n < MIN_N or self.small_part

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "low": self.low, "high": self.high, "n": self.n}
        out.update(unit=self.unit, items=self.items, method=self.method, small=self.small)
        if self.parts:
            out["datasets"] = self.parts
        if self.small:
            out["note"] = SMALL
        return out


def empty(unit: str = "games") -> Figure:
    return Figure(None, None, None, 0, unit)


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng([SEED, zlib.crc32(key.encode("utf-8"))])


def cluster_draws(values: Sequence[float], clusters: Sequence[str], key: str) -> NDArray[np.float64] | None:
    """`RESAMPLES` bootstrap means over items (`common.stats.cluster_bootstrap`, from the key's
    generator), each draw's mean over its items' units; None under 2 items."""
    return cluster_bootstrap(values, clusters, resamples=RESAMPLES, rng=_rng(key))


def percentile_interval(draws: NDArray[np.float64] | None) -> tuple[float | None, float | None]:
    if draws is None:
        return None, None
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def estimate(values: Sequence[float], clusters: Sequence[str], key: str, unit: str = "games") -> Figure:
    """The mean of `values` (one per unit; `clusters` names each unit's item) with its interval."""
    if not values:
        return empty(unit)
    items = len(set(clusters))
    draws = cluster_draws(values, clusters, key)
    if items == len(values) and all(v in (0.0, 1.0) for v in values):
        share = proportion(int(sum(values)), len(values))
        return Figure(share.value, share.low, share.high, len(values), unit, items, WILSON, draws=draws)
    low, high = percentile_interval(draws)
    return Figure(fmean(values), low, high, len(values), unit, items, BOOTSTRAP, draws=draws)


def mean_of(parts: Sequence[Figure], unit: str = "games") -> Figure:
    """The unweighted mean of the parts that have a value, with the mean of their bootstrap draws."""
    shown = [p for p in parts if p.value is not None]
    if not shown:
        return empty(unit)
    value = fmean(p.value for p in shown if p.value is not None)
    draws = None
    if all(p.draws is not None for p in shown):
        draws = np.mean(np.stack([p.draws for p in shown if p.draws is not None]), axis=0)
    low, high = percentile_interval(draws)
    n, items = sum(p.n for p in shown), sum(p.items for p in shown)
    small = any(p.small for p in shown)
    return Figure(value, low, high, n, unit, items, MEAN, len(shown), small, draws)
