"""The meta-evaluation numbers, exactly as docs/judges.md ("Meta-evaluation: exact definitions")
defines them: games, invalid-output policies, majority / any / all-sample correctness, verdict
variance, invalid-response share, position consistency and flip rate, by dataset, family and tertile.
Pure functions over `JudgeVerdict` records."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any, Literal

from livemed.records import JudgeVerdict

Policy = Literal["separate", "half", "wrong"]
POLICIES: tuple[Policy, ...] = ("separate", "half", "wrong")
Outcome = Literal["correct", "wrong", "invalid"]
DECOMPOSABLE = ("pico", "medcalc")
ATOMIC = ("medbullets", "medqa", "pubmedqa")
DATASET_ORDER = (*DECOMPOSABLE, *ATOMIC)


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


@dataclass
class Summary:
    """The numbers of one set of games; None where undefined (no games, or an empty denominator)."""

    games: int = 0
    samples: int = 0
    majority: float | None = None
    any_sample: float | None = None
    all_sample: float | None = None
    variance: float | None = None
    invalid: int = 0
    wrong: int = 0
    invalid_share: float | None = None
    invalid_games: int = 0
    both_orders: int = 0
    consistent: float | None = None
    flip_rate: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def summarise(selected: list[Game], policy: Policy = "separate") -> Summary:
    """Majority / any / all-sample correctness, variance, invalid share, position metrics."""
    out = Summary(games=len(selected))
    if not selected:
        return out
    out.samples = sum(len(g.outcomes) for g in selected)
    out.majority = _mean([g.score(policy) for g in selected])
    out.any_sample = _mean([1.0 if g.count("correct") else 0.0 for g in selected])
    out.all_sample = _mean([1.0 if g.count("correct") == len(g.outcomes) else 0.0 for g in selected])
    out.variance = abs(out.any_sample - out.all_sample)  # type: ignore[operator]
    out.invalid = sum(g.count("invalid") for g in selected)
    out.wrong = sum(g.count("wrong") for g in selected)
    out.invalid_share = out.invalid / (out.invalid + out.wrong) if out.invalid + out.wrong else None
    out.invalid_games = sum(1 for g in selected if g.count("invalid") == len(g.outcomes))
    _position(out, selected, policy)
    return out


def _position(out: Summary, selected: list[Game], policy: Policy) -> None:
    by_pair: dict[str, dict[str, Game]] = defaultdict(dict)
    for game in selected:
        by_pair[game.pair_id][game.order] = game
    both = [p for p in by_pair.values() if "original" in p and "swapped" in p]
    out.both_orders = len(both)
    if not both:
        return
    out.consistent = fmean(
        1.0 if p["original"].score(policy) == 1.0 and p["swapped"].score(policy) == 1.0 else 0.0 for p in both
    )
    decided = [p for p in both if p["original"].majority_slot and p["swapped"].majority_slot]
    if decided:
        out.flip_rate = fmean(
            1.0 if p["original"].majority_slot == p["swapped"].majority_slot else 0.0 for p in decided
        )


@dataclass
class MetaTables:
    """Every number of one judge run: per dataset, family, average, and per decomposable tertile."""

    policy: Policy
    datasets: dict[str, Summary]
    tertiles: dict[str, dict[str, Summary]]

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
        invalid = sum(s.invalid for s in self.datasets.values())
        wrong = sum(s.wrong for s in self.datasets.values())
        return invalid / (invalid + wrong) if invalid + wrong else None

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
            "tertile_mean": {t: self.tertile_mean(t) for t in ("hard", "medium", "easy")},
            "consistent": self.average("consistent"),
            "flip_rate": self.average("flip_rate"),
        }


def _dataset_key(name: str) -> tuple[int, str]:
    return (DATASET_ORDER.index(name) if name in DATASET_ORDER else len(DATASET_ORDER), name)


def evaluate(verdicts: Iterable[JudgeVerdict], policy: Policy = "separate") -> MetaTables:
    """The tables of one judge's verdicts (one judge, one mode)."""
    grouped: dict[str, list[Game]] = defaultdict(list)
    for game in games(verdicts):
        grouped[game.dataset].append(game)
    datasets = {d: summarise(grouped[d], policy) for d in sorted(grouped, key=_dataset_key)}
    tertiles: dict[str, dict[str, Summary]] = {}
    for name in datasets:
        parts = [g for g in grouped[name] if g.tertile]
        if parts:
            tertiles[name] = {
                t: summarise([g for g in parts if g.tertile == t], policy) for t in ("hard", "medium", "easy")
            }
    return MetaTables(policy, datasets, tertiles)
