"""The meta-evaluation numbers, exactly as docs/judges.md ("Meta-evaluation: exact definitions")
defines them: games, invalid-output policies, majority / any / all-sample correctness, verdict
variance, invalid-response share, position consistency and flip rate, by dataset, family and tertile,
each also as a `Figure` with its n and interval (`figures.py`), and the games asked / answered /
invalid / missing per cell (`Coverage`). Pure functions over `JudgeVerdict` records (and the samples
whose call failed, `Missing`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any, Literal

from livemed.judges.figures import Figure, empty, estimate, mean_of
from livemed.records import JudgeVerdict

Policy = Literal["separate", "half", "wrong"]
POLICIES: tuple[Policy, ...] = ("separate", "half", "wrong")
Outcome = Literal["correct", "wrong", "invalid"]
DECOMPOSABLE = ("pico", "medcalc")
ATOMIC = ("medbullets", "medqa", "pubmedqa")
DATASET_ORDER = (*DECOMPOSABLE, *ATOMIC)
TERTILES = ("hard", "medium", "easy")
METRICS = ("majority", "any_sample", "all_sample", "variance", "invalid_share", "consistent", "flip_rate")
UNITS = {"invalid_share": "samples", "consistent": "pairs", "flip_rate": "pairs"}


def item_of(pair_id: str, dataset: str) -> str:
    """The benchmark item a pair comes from (`pair:<dataset>:<item>:<chosen>><rejected>`)."""
    return pair_id.removeprefix(f"pair:{dataset}:").split(":", 1)[0]


@dataclass(frozen=True)
class Missing:
    """A sample that was asked and has no verdict because its call failed (a `call_failed` rejection)."""

    pair_id: str
    dataset: str
    tertile: str | None
    order: str
    sample: int


def outcome(verdict: JudgeVerdict) -> Outcome:
    if verdict.verdict is None:
        return "invalid"
    return "correct" if verdict.verdict == verdict.gold else "wrong"


@dataclass
class Game:
    """One pair in one slot order: its samples' outcomes and slot votes."""

    pair_id: str
    dataset: str
    tertile: str | None
    order: str
    outcomes: list[Outcome] = field(default_factory=list)
    votes: dict[str, int] = field(default_factory=lambda: {"A": 0, "B": 0})
    failed: int = 0  # samples whose call failed (no verdict)

    @property
    def item(self) -> str:
        """The item, named with its dataset (so that items of two datasets never cluster together)."""
        return f"{self.dataset}:{item_of(self.pair_id, self.dataset)}"

    @property
    def answered(self) -> bool:
        return bool(self.outcomes)

    def add(self, verdict: JudgeVerdict) -> None:
        self.outcomes.append(outcome(verdict))
        if verdict.verdict in ("A", "B"):
            self.votes[verdict.verdict] += 1

    def count(self, kind: Outcome) -> int:
        return self.outcomes.count(kind)

    def score(self, policy: Policy) -> float:
        """1 when the gold slot has more votes, 0 when the other has, ties 0 (0.5 under `half`)."""
        correct, wrong, invalid = self.count("correct"), self.count("wrong"), self.count("invalid")
        gold = correct + (0.5 * invalid if policy == "half" else 0.0)
        other = wrong + (invalid if policy == "wrong" else 0.5 * invalid if policy == "half" else 0.0)
        if gold != other:
            return 1.0 if gold > other else 0.0
        return 0.5 if policy == "half" else 0.0

    @property
    def majority_slot(self) -> str | None:
        """The slot most valid samples chose; None on a tie or with no valid sample."""
        a, b = self.votes["A"], self.votes["B"]
        return None if a == b else "A" if a > b else "B"


def games(verdicts: Iterable[JudgeVerdict]) -> list[Game]:
    """Verdicts grouped into games (pair × order), in a stable order."""
    found: dict[tuple[str, str], Game] = {}
    for verdict in verdicts:
        key = (verdict.pair_id, verdict.order)
        game = found.get(key)
        if game is None:
            game = found[key] = Game(verdict.pair_id, verdict.dataset, verdict.tertile, verdict.order)
        game.add(verdict)
    return [found[key] for key in sorted(found)]


def asked_games(
    verdicts: Iterable[JudgeVerdict], missing: Iterable[Missing] = ()
) -> tuple[list[Game], dict[str, int], tuple[str, ...]]:
    """Every game asked (its pair has a verdict or a failed sample, in each order of the mode), the
    samples asked per game of each dataset (k: the most any game of that dataset was asked, since one
    configuration may be run with `--samples 3` on one dataset and 1 on another) and the orders;
    unanswered games are empty."""
    verdicts = list(verdicts)
    missing = list(missing)
    found = {(g.pair_id, g.order): g for g in games(verdicts)}
    pairwise = any(v.mode == "pairwise" for v in verdicts) or any(m.order == "swapped" for m in missing)
    orders: tuple[str, ...] = ("original", "swapped") if pairwise else ("original",)
    k: dict[str, int] = {}
    for dataset, sample in [(v.dataset, v.sample) for v in verdicts] + [
        (m.dataset, m.sample) for m in missing
    ]:
        k[dataset] = max(k.get(dataset, 0), sample + 1)
    where = {g.pair_id: (g.dataset, g.tertile) for g in found.values()}
    where.update({m.pair_id: (m.dataset, m.tertile) for m in missing if m.pair_id not in where})
    for pair_id, (dataset, tertile) in where.items():
        for order in orders:
            found.setdefault((pair_id, order), Game(pair_id, dataset, tertile, order))
    for m in missing:
        found[(m.pair_id, m.order)].failed += 1
    return [found[key] for key in sorted(found)], k, orders


@dataclass
class Coverage:
    """Games and samples asked, answered, invalid and missing (failed calls, or not yet answered)."""

    games_asked: int = 0
    games_answered: int = 0
    games_invalid: int = 0  # answered, every answered sample invalid
    games_missing: int = 0  # asked, no sample answered
    samples_asked: int = 0
    samples_answered: int = 0
    samples_invalid: int = 0
    samples_missing: int = 0
    failed_calls: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def coverage(selected: list[Game], k: Mapping[str, int]) -> Coverage:
    """`selected`'s coverage, each game asked `k[its dataset]` samples."""
    out = Coverage(games_asked=len(selected), samples_asked=sum(k.get(g.dataset, 0) for g in selected))
    answered = [g for g in selected if g.answered]
    out.games_answered = len(answered)
    out.games_invalid = sum(1 for g in answered if g.count("invalid") == len(g.outcomes))
    out.games_missing = out.games_asked - out.games_answered
    out.samples_answered = sum(len(g.outcomes) for g in answered)
    out.samples_invalid = sum(g.count("invalid") for g in answered)
    out.samples_missing = out.samples_asked - out.samples_answered
    out.failed_calls = sum(g.failed for g in selected)
    return out


@dataclass
class Summary:
    """The numbers of one set of games; None where undefined (no games, or an empty denominator).
    `figures` holds each metric as a `Figure` (n and interval); `coverage` what was asked and answered."""

    games: int = 0  # answered games (the figures are over these)
    samples: int = 0
    majority: float | None = None
    any_sample: float | None = None
    all_sample: float | None = None
    variance: float | None = None
    correct: int = 0
    invalid: int = 0
    wrong: int = 0
    invalid_share: float | None = None
    invalid_games: int = 0
    both_orders: int = 0
    consistent: float | None = None
    flip_rate: float | None = None
    figures: dict[str, Figure] = field(default_factory=dict)
    coverage: Coverage = field(default_factory=Coverage)

    def figure(self, metric: str) -> Figure:
        return self.figures.get(metric) or empty(UNITS.get(metric, "games"))

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("figures", "coverage")}
        return out | {"coverage": self.coverage.as_dict()}

    def figures_dict(self) -> dict[str, Any]:
        """Every metric as {value, low, high, n, unit, items, method, small}, and the coverage."""
        out: dict[str, Any] = {m: self.figure(m).as_dict() for m in METRICS}
        counts = {"correct": self.correct, "wrong": self.wrong, "invalid": self.invalid}
        return out | {"samples": counts, "coverage": self.coverage.as_dict()}


def _samples_seen(selected: list[Game]) -> dict[str, int]:
    """Per dataset, the most samples any of its games has (k when the run's own is not known)."""
    k: dict[str, int] = {}
    for g in selected:
        k[g.dataset] = max(k.get(g.dataset, 0), len(g.outcomes))
    return k


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def summarise(
    selected: list[Game], policy: Policy = "separate", key: str = "", k: Mapping[str, int] | None = None
) -> Summary:
    """Majority / any / all-sample correctness, variance, invalid share, position metrics, over the
    answered games of `selected` (unanswered ones count in the coverage only)."""
    answered = [g for g in selected if g.answered]
    out = Summary(games=len(answered))
    out.coverage = coverage(selected, k if k is not None else _samples_seen(selected))
    if not answered:
        return out
    out.samples = sum(len(g.outcomes) for g in answered)
    out.majority = _mean([g.score(policy) for g in answered])
    out.any_sample = _mean([1.0 if g.count("correct") else 0.0 for g in answered])
    out.all_sample = _mean([1.0 if g.count("correct") == len(g.outcomes) else 0.0 for g in answered])
    out.variance = abs(out.any_sample - out.all_sample)  # type: ignore[operator]
    out.correct = sum(g.count("correct") for g in answered)
    out.invalid = sum(g.count("invalid") for g in answered)
    out.wrong = sum(g.count("wrong") for g in answered)
    out.invalid_share = out.invalid / (out.invalid + out.wrong) if out.invalid + out.wrong else None
    out.invalid_games = sum(1 for g in answered if g.count("invalid") == len(g.outcomes))
    _position(out, answered, policy)
    out.figures = _game_figures(answered, policy, key) | _position_figures(answered, policy, key)
    return out


def _game_figures(answered: list[Game], policy: Policy, key: str) -> dict[str, Figure]:
    items = [g.item for g in answered]
    anyone = [1.0 if g.count("correct") else 0.0 for g in answered]
    every = [1.0 if g.count("correct") == len(g.outcomes) else 0.0 for g in answered]
    errors = [(g.item, o == "invalid") for g in answered for o in g.outcomes if o != "correct"]
    return {
        "majority": estimate([g.score(policy) for g in answered], items, f"{key}|majority"),
        "any_sample": estimate(anyone, items, f"{key}|any_sample"),
        "all_sample": estimate(every, items, f"{key}|all_sample"),
        "variance": estimate([a - b for a, b in zip(anyone, every, strict=True)], items, f"{key}|variance"),
        "invalid_share": estimate(
            [1.0 if bad else 0.0 for _, bad in errors], [i for i, _ in errors], f"{key}|invalid", "samples"
        ),
    }


def _both_orders(selected: list[Game]) -> list[dict[str, Game]]:
    by_pair: dict[str, dict[str, Game]] = defaultdict(dict)
    for game in selected:
        by_pair[game.pair_id][game.order] = game
    return [p for p in by_pair.values() if "original" in p and "swapped" in p]


def _consistent(pair: dict[str, Game], policy: Policy) -> float:
    return 1.0 if pair["original"].score(policy) == 1.0 and pair["swapped"].score(policy) == 1.0 else 0.0


def _decided(both: list[dict[str, Game]]) -> list[dict[str, Game]]:
    return [p for p in both if p["original"].majority_slot and p["swapped"].majority_slot]


def _flip(pair: dict[str, Game]) -> float:
    return 1.0 if pair["original"].majority_slot == pair["swapped"].majority_slot else 0.0


def _position(out: Summary, selected: list[Game], policy: Policy) -> None:
    both = _both_orders(selected)
    out.both_orders = len(both)
    if not both:
        return
    out.consistent = fmean(_consistent(p, policy) for p in both)
    decided = _decided(both)
    if decided:
        out.flip_rate = fmean(_flip(p) for p in decided)


def _position_figures(selected: list[Game], policy: Policy, key: str) -> dict[str, Figure]:
    both = _both_orders(selected)
    decided = _decided(both)
    return {
        "consistent": estimate(
            [_consistent(p, policy) for p in both],
            [p["original"].item for p in both],
            f"{key}|consistent",
            "pairs",
        ),
        "flip_rate": estimate(
            [_flip(p) for p in decided], [p["original"].item for p in decided], f"{key}|flip_rate", "pairs"
        ),
    }


@dataclass
class MetaTables:
    """Every number of one judge run: per dataset, family, average, and per decomposable tertile;
    `pooled` is every game of the run together (the pooled invalid share, the run's coverage)."""

    policy: Policy
    datasets: dict[str, Summary]
    tertiles: dict[str, dict[str, Summary]]
    pooled: Summary = field(default_factory=Summary)

    def family(self, name: str, metric: str) -> float | None:
        members = DECOMPOSABLE if name == "decomposable" else ATOMIC
        return _mean(
            [v for d in members if d in self.datasets if (v := getattr(self.datasets[d], metric)) is not None]
        )

    def average(self, metric: str) -> float | None:
        return _mean([v for s in self.datasets.values() if (v := getattr(s, metric)) is not None])

    def tertile_mean(self, tertile: str, metric: str = "majority") -> float | None:
        values = [
            v
            for parts in self.tertiles.values()
            if tertile in parts
            if (v := getattr(parts[tertile], metric)) is not None
        ]
        return _mean(values)

    def verdict_variance(self) -> float | None:
        """The mean over datasets of |any − all| (the paper's Table 3)."""
        return self.average("variance")

    def invalid_share(self) -> float | None:
        """Pooled: invalid ÷ (invalid + wrong) over every sample of the run."""
        invalid = sum(s.invalid for s in self.datasets.values())
        wrong = sum(s.wrong for s in self.datasets.values())
        return invalid / (invalid + wrong) if invalid + wrong else None

    def family_figure(self, name: str, metric: str = "majority") -> Figure:
        members = DECOMPOSABLE if name == "decomposable" else ATOMIC
        return mean_of([self.datasets[d].figure(metric) for d in members if d in self.datasets])

    def average_figure(self, metric: str) -> Figure:
        """The unweighted mean over datasets (the paper's overall figures)."""
        return mean_of([s.figure(metric) for s in self.datasets.values()], UNITS.get(metric, "games"))

    def tertile_figure(self, tertile: str, metric: str = "majority") -> Figure:
        return mean_of(
            [parts[tertile].figure(metric) for parts in self.tertiles.values() if tertile in parts]
        )

    @property
    def coverage(self) -> Coverage:
        return self.pooled.coverage

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "datasets": {d: s.as_dict() for d, s in self.datasets.items()},
            "tertiles": {d: {t: s.as_dict() for t, s in parts.items()} for d, parts in self.tertiles.items()},
            "decomposable": self.family("decomposable", "majority"),
            "atomic": self.family("atomic", "majority"),
            "average": self.average("majority"),
            "verdict_variance": self.verdict_variance(),
            "invalid_share": self.invalid_share(),
            "tertile_mean": {t: self.tertile_mean(t) for t in TERTILES},
            "consistent": self.average("consistent"),
            "flip_rate": self.average("flip_rate"),
        }

    def figures_dict(self) -> dict[str, Any]:
        """Every figure with its n and interval, and the coverage per cell (what `judges report --json`
        writes); overall figures are unweighted means over datasets, `pooled` over every sample."""
        return {
            "policy": self.policy,
            "coverage": self.coverage.as_dict(),
            "datasets": {
                d: s.figures_dict()
                | {"tertiles": {t: p.figures_dict() for t, p in self.tertiles.get(d, {}).items()}}
                for d, s in self.datasets.items()
            },
            "decomposable": self.family_figure("decomposable").as_dict(),
            "atomic": self.family_figure("atomic").as_dict(),
            "average": {m: self.average_figure(m).as_dict() for m in METRICS},
            "tertile_mean": {t: self.tertile_figure(t).as_dict() for t in TERTILES},
            "pooled": self.pooled.figures_dict(),
        }


def _dataset_key(name: str) -> tuple[int, str]:
    return (DATASET_ORDER.index(name) if name in DATASET_ORDER else len(DATASET_ORDER), name)


def evaluate(
    verdicts: Iterable[JudgeVerdict], policy: Policy = "separate", missing: Iterable[Missing] = ()
) -> MetaTables:
    """The tables of one judge's verdicts (one judge, one mode); `missing`: its samples whose call
    failed, so that games asked and not answered are counted."""
    every, k, _ = asked_games(verdicts, missing)
    grouped: dict[str, list[Game]] = defaultdict(list)
    for game in every:
        grouped[game.dataset].append(game)
    datasets = {d: summarise(grouped[d], policy, d, k) for d in sorted(grouped, key=_dataset_key)}
    tertiles: dict[str, dict[str, Summary]] = {}
    for name in datasets:
        parts = [g for g in grouped[name] if g.tertile]
        if parts:
            tertiles[name] = {
                t: summarise([g for g in parts if g.tertile == t], policy, f"{name}|{t}", k) for t in TERTILES
            }
    return MetaTables(policy, datasets, tertiles, summarise(every, policy, "pooled", k))
