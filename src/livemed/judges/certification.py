"""Whether a figure certifies a grader: it must beat the best trivial grader's figure on the same battery
with a 95 % interval that excludes it (docs/judges.md, "Validity cards").

Every figure is a `livemed.common.closed_form.Proportion` (k of n, Wilson interval) kept as its dict
(`value`, `k`, `n`, `low`, `high`) with the trivial graders' figures beside it and a verdict:

- *not enough data*: n < `MIN_N` (30), units clustered in fewer than `MIN_CLUSTERS` (10) items, or
  the figure is above the bar but its interval is wider than ±`DECISIVE_HALF_WIDTH` and still holds
  the bar (more items could decide);
- *passed*: the interval's low end is above the best trivial figure;
- *failed*: otherwise (the figure is no better than a trivial grader's, or only within the noise of a
  narrow interval).

A part of the card (and the card) is *failed* when any of its decisive figures failed, *passed* when
its headline figure passed and no decisive figure failed, else *not enough data*."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from livemed.common.closed_form import Proportion
from livemed.common.stats import MIN_N

Verdict = Literal["passed", "failed", "not enough data"]
VERDICTS: tuple[Verdict, ...] = ("passed", "failed", "not enough data")
DECISIVE_HALF_WIDTH = 0.05  # above the bar but undecided with an interval wider than this: more data
TARGET_HALF_WIDTH = 0.05  # the battery's size aims at intervals this wide (±) for its headline figures
Z95 = 1.959964


def needed_n(half_width: float = TARGET_HALF_WIDTH, p: float = 0.5) -> int:
    """Items for a 95 % interval of at most ±`half_width` at rate `p` (the normal approximation)."""
    return int(-(-(Z95**2) * p * (1 - p) // half_width**2))


def decide(figure: Proportion, bar: float | None) -> Verdict:
    """The verdict of one figure against the best trivial figure `bar`."""
    if figure.small or figure.low is None or figure.high is None or figure.value is None:
        return "not enough data"
    if bar is None or figure.low > bar:
        return "passed" if bar is not None else "not enough data"
    if figure.value <= bar or (figure.high - figure.low) / 2 <= DECISIVE_HALF_WIDTH:
        return "failed"
    return "not enough data"


def judged(figure: Proportion, trivial: Mapping[str, Proportion], decisive: bool = True) -> dict[str, Any]:
    """The figure's dict with the trivial graders' figures, the best of them and the verdict (a figure
    that is not `decisive` is shown with its interval and no verdict)."""
    values = {name: p.value for name, p in trivial.items() if p.value is not None}
    best = max(values, key=lambda name: values[name], default=None)
    out: dict[str, Any] = {
        **figure.as_dict(),
        "trivial": {name: p.as_dict() for name, p in trivial.items()},
        "best_trivial": best,
        "bar": values.get(best) if best is not None else None,
    }
    if decisive:
        out["verdict"] = decide(figure, out["bar"])
    return out


def overall(headline: Verdict | None, others: Iterable[Verdict]) -> Verdict:
    """Failed when any figure failed; passed when the headline passed and no figure failed."""
    rest = list(others)
    if headline == "failed" or "failed" in rest:
        return "failed"
    return "passed" if headline == "passed" else "not enough data"


def combine(parts: Iterable[Verdict | None]) -> Verdict:
    """The card's verdict over its parts: failed if one failed, passed if every measured part passed."""
    measured = [p for p in parts if p is not None]
    if "failed" in measured:
        return "failed"
    if measured and all(p == "passed" for p in measured):
        return "passed"
    return "not enough data"


def shown(figure: Mapping[str, Any] | None, digits: int = 2) -> str:
    """`0.83 [0.79, 0.87] n=400`, `n too small (12)` below MIN_N, `–` when not measured."""
    if not figure or figure.get("value") is None:
        return "–"
    if figure["n"] < MIN_N:
        return f"n too small ({figure['n']})"
    low, high = figure.get("low"), figure.get("high")
    interval = f" [{low:.{digits}f}, {high:.{digits}f}]" if low is not None and high is not None else ""
    return f"{figure['value']:.{digits}f}{interval} n={figure['n']}"


def _share(flags: Iterable[bool]) -> Proportion:
    from livemed.common.closed_form import proportion

    values = list(flags)
    return proportion(sum(values), len(values))


def _clustered(units: Iterable[tuple[bool, str]], key: str) -> Proportion:
    """The share of right units whose items (`(right, item)` each) may hold several: Wilson when each
    item has one unit, else the percentile interval of a bootstrap over items (`judges.figures`), with
    the number of items (fewer than `closed_form.MIN_CLUSTERS` is not enough data)."""
    from livemed.judges.figures import WILSON, estimate

    found = list(units)
    rights = [1.0 if right else 0.0 for right, _ in found]
    figure = estimate(rights, [item for _, item in found], key)
    items = None if figure.method in (WILSON, "") else figure.items
    return Proportion(int(sum(rights)), len(found), figure.low, figure.high, items=items)


# The rubric part: each item right or not (a strict majority of its samples right).


def rubric_part(outcomes: list[Any], trivial: Mapping[str, list[Any]]) -> dict[str, Any]:
    """Per axis and over all axes: the share of items graded right, against the trivial graders' shares
    on the same items (`outcomes` and each trivial list are `rubric_validation.ItemOutcome`s, in one
    order); by polarity and form as breakdowns; compliance (usable verdicts of those asked)."""

    def figure(keep: Any, decisive: bool = True) -> dict[str, Any]:
        def share(found: list[Any], key: str) -> Proportion:
            return _clustered(((o.right, o.probe.fact) for o in found if keep(o)), key)

        mine = share(outcomes, "rubric")
        others = {name: share(items, f"rubric:{name}") for name, items in trivial.items()}
        return judged(mine, others, decisive)

    axes = sorted({o.probe.criterion.axis for o in outcomes})
    figures = {"all axes": figure(lambda o: True)}
    for axis in axes:
        figures[f"axis {axis}"] = figure(lambda o, a=axis: o.probe.criterion.axis == a)
    breakdown = {
        f"{polarity} criteria": figure(lambda o, p=polarity: o.probe.criterion.polarity == p, False)
        for polarity in ("positive", "negative")
    }
    forms = sorted({o.probe.form for o in outcomes})
    breakdown |= {f"form {f}": figure(lambda o, f=f: o.probe.form == f, False) for f in forms}
    verdicts = [v for v in (o.verdicts for o in outcomes) for v in v]
    compliance = _share(v is not None for v in verdicts)
    headline = figures["all axes"]["verdict"]
    return {
        "verdict": overall(headline, [f["verdict"] for f in figures.values()]),
        "figures": figures,
        "breakdown": breakdown,
        "compliance": compliance.as_dict(),
        "items": len(outcomes),
        "trivial": sorted(trivial),
    }


# The pair part: games (pair × order) right by the majority of their samples, pairs right in both orders.


def _game_rights(verdicts: Iterable[Any]) -> dict[tuple[str, str], tuple[Any, bool]]:
    from livemed.judges.meta import games

    return {(g.pair_id, g.order): (g, g.score("separate") == 1.0) for g in games(verdicts)}


def _pair_rights(games: Mapping[tuple[str, str], tuple[Any, bool]]) -> dict[str, bool]:
    orders: dict[str, list[bool]] = {}
    for (pair_id, _), (_, right) in games.items():
        orders.setdefault(pair_id, []).append(right)
    return {p: len(r) == 2 and all(r) for p, r in orders.items() if len(r) == 2}


def pair_part(plain: list[Any], probe: list[Any], trivial: Mapping[str, list[Any]]) -> dict[str, Any]:
    """Pairwise correctness over all games and per dataset, and position consistency (right in both
    orders), against the trivial pair judges on the same pairs; per tertile, invalid samples and the
    length probe as breakdowns (`plain`, `probe` and the trivial lists are `JudgeVerdict`s)."""
    mine = _game_rights(plain)
    others = {name: _game_rights(v) for name, v in trivial.items()}

    def games_figure(keep: Any, decisive: bool = True) -> dict[str, Any]:
        def share(found: Mapping[tuple[str, str], tuple[Any, bool]], key: str) -> Proportion:
            return _clustered(((right, _item(g.pair_id)) for g, right in found.values() if keep(g)), key)

        theirs = {name: share(found, f"pairs:{name}") for name, found in others.items()}
        return judged(share(mine, "pairs"), theirs, decisive)

    datasets = sorted({g.dataset for g, _ in mine.values()})
    figures = {"correctness": games_figure(lambda g: True)}

    def consistent(found: Mapping[tuple[str, str], tuple[Any, bool]], key: str) -> Proportion:
        return _clustered(((right, _item(p)) for p, right in _pair_rights(found).items()), key)

    figures["position-consistent"] = judged(
        consistent(mine, "consistent"), {n: consistent(f, f"consistent:{n}") for n, f in others.items()}
    )
    for name in datasets:
        figures[f"dataset {name}"] = games_figure(lambda g, d=name: g.dataset == d)
    tertiles = {t: games_figure(lambda g, t=t: g.tertile == t, False) for t in ("hard", "medium", "easy")}
    return {
        "verdict": overall(figures["correctness"]["verdict"], [f["verdict"] for f in figures.values()]),
        "figures": figures,
        "tertiles": {t: f for t, f in tertiles.items() if f["n"]},
        "invalid_samples": _share(v.verdict is None for v in plain).as_dict(),
        "length_probe": _length_probe(mine, probe),
        "games": len(mine),
        "pairs": len({pair for pair, _ in mine}),
        "datasets": {d: sum(1 for g, _ in mine.values() if g.dataset == d) for d in datasets},
        "trivial": sorted(trivial),
    }


def _item(pair_id: str) -> str:
    """The benchmark item a pair comes from (`pair:<dataset>:<item>:<chosen>><rejected>`)."""
    return pair_id[: pair_id.rfind(":", 0, pair_id.find(">"))]


def _length_probe(
    plain: Mapping[tuple[str, str], tuple[Any, bool]], probe: list[Any]
) -> dict[str, Any] | None:
    """Correctness on the probed pairs as they are and with the worse response padded with filler (a
    drop is a length bias)."""
    padded = _game_rights(probe)
    if not padded:
        return None
    probed = {(_unpadded(pair), order) for pair, order in padded}
    plain_share = _share(right for key, (_, right) in plain.items() if key in probed)
    padded_share = _share(right for _, right in padded.values())
    drop = None
    if plain_share.value is not None and padded_share.value is not None:
        drop = plain_share.value - padded_share.value
    return {"plain": plain_share.as_dict(), "padded": padded_share.as_dict(), "drop": drop}


def _unpadded(pair_id: str) -> str:
    """`pair:probe:medqa:1:gold>option:A+pad` → `pair:medqa:1:gold>option:A` (`cards.length_probe`)."""
    return pair_id.replace("pair:probe:", "pair:", 1).removesuffix("+pad")
