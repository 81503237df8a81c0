"""From Score records to one score per (model, case): the unit every analysis works on.

A model may have several sampled answers per case and several judges may have scored them. The
analyses use one judge, one scoring convention and one failure policy at a time (never a mix), and
average a model's samples on a case, so every case weighs the same.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, NamedTuple, Protocol, TypeVar, overload

from livemed.records import Score

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CaseScore:
    """A model's score on one case (the mean over its scored samples)."""

    model: str
    case_id: str
    score: float
    published: datetime | None = None
    per_axis: Mapping[str, float] = field(default_factory=dict)
    coverage: float = 0.0
    harm: float = 0.0
    failures: int = 0
    samples: int = 1
    answer_ids: tuple[str, ...] = ()


def judges(scores: Iterable[Score], convention: str = "livemed", policy: str = "strict") -> list[str]:
    """The judges that produced scores under a convention and failure policy, sorted."""
    return sorted({s.judge for s in scores if s.convention == convention and s.failure_policy == policy})


def select(
    scores: Iterable[Score],
    *,
    judge: str | None,
    convention: str = "livemed",
    policy: str = "strict",
    rubric_version: str = "writer",
) -> list[Score]:
    """Scores of one convention and one failure policy on one choice of rubrics (the writer's by
    default), and of one judge when given."""
    return [
        s
        for s in scores
        if s.convention == convention
        and s.failure_policy == policy
        and s.rubric_version == rubric_version
        and (judge is None or s.judge == judge)
    ]


class Scored(Protocol):
    """What the analyses read of one score: a stored `Score`, or the compact `ScoreRef` of
    `analysis.collect.load_scores`."""

    @property
    def answer_id(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def judge(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def published(self) -> datetime | None: ...


class ScoreRef(NamedTuple):
    """One selected score as the analyses keep it after the (model, case) rows are built: a tuple of
    six fields instead of the whole Score record (no per-theme or per-tag tables, no provenance)."""

    answer_id: str
    case_id: str
    model: str
    judge: str
    score: float
    published: datetime | None


class _Kept(Generic[T]):
    """Values kept once each, by their index."""

    def __init__(self) -> None:
        self._index: dict[T, int] = {}
        self.values: list[T] = []

    def index(self, value: T) -> int:
        found = self._index.get(value)
        if found is None:
            found = self._index[value] = len(self.values)
            self.values.append(value)
        return found


class ScoreColumns(Sequence[ScoreRef]):
    """Scores added one at a time, kept as columns (typed arrays, and one string per score: its
    answer id), never as records: a few hundred bytes a score. `rows()` builds one CaseScore per
    (model, case) from them; the columns read back as a sequence of `ScoreRef`. The record path
    (`case_scores`) and the store path (`analysis.collect.load_scores`) both go through it, so their
    rows are the same to the last bit."""

    def __init__(self) -> None:
        self._keys: dict[tuple[str, str], int] = {}  # (model, case) -> its group
        self._key_list: list[tuple[str, str]] = []
        self._judges, self._axes = _Kept[str](), _Kept[str]()  # each name and date kept once
        self._dates = _Kept[datetime | None]()
        self._group, self._judge, self._published = array("l"), array("l"), array("l")
        self._score, self._coverage, self._harm = array("d"), array("d"), array("d")
        self._failures = array("l")
        self._answer: list[str] = []
        self._axis_start = array("l", [0])  # score i's axis values: entries _axis_start[i]:[i + 1]
        self._axis, self._axis_value = array("l"), array("d")

    def add(
        self,
        *,
        model: str,
        case_id: str,
        answer_id: str,
        judge: str,
        score: float,
        coverage: float,
        harm: float,
        failures: int,
        per_axis: Mapping[str, float],
        published: datetime | None,
    ) -> None:
        key = (model, case_id)
        group = self._keys.get(key)
        if group is None:
            group = self._keys[key] = len(self._key_list)
            self._key_list.append(key)
        self._group.append(group)
        self._judge.append(self._judges.index(judge))
        self._published.append(self._dates.index(published))
        self._score.append(score)
        self._coverage.append(coverage)
        self._harm.append(harm)
        self._failures.append(failures)
        self._answer.append(answer_id)
        for axis, value in per_axis.items():
            self._axis.append(self._axes.index(axis))
            self._axis_value.append(value)
        self._axis_start.append(len(self._axis))

    def __len__(self) -> int:
        return len(self._answer)

    @overload
    def __getitem__(self, i: int) -> ScoreRef: ...
    @overload
    def __getitem__(self, i: slice) -> list[ScoreRef]: ...
    def __getitem__(self, i: int | slice) -> ScoreRef | list[ScoreRef]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        model, case_id = self._key_list[self._group[i]]
        judge, published = self._judges.values[self._judge[i]], self._dates.values[self._published[i]]
        return ScoreRef(self._answer[i], case_id, model, judge, self._score[i], published)

    def __iter__(self) -> Iterator[ScoreRef]:
        return (self[i] for i in range(len(self)))

    def rows(self, case_dates: Mapping[str, datetime] | None = None) -> list[CaseScore]:
        """One row per (model, case), sorted by (model, case): the means over its scores, the case
        date from `case_dates`, else the first dated score's."""
        dates = case_dates or {}
        members: list[list[int]] = [[] for _ in self._key_list]
        for i, group in enumerate(self._group):
            members[group].append(i)
        axes, dates_of, start = self._axes.values, self._dates.values, self._axis_start
        out = []
        for (model, case_id), group in sorted(self._keys.items()):
            idx = members[group]
            n = len(idx)
            sums: dict[str, float] = defaultdict(float)
            counts: dict[str, int] = defaultdict(int)
            for i in idx:
                for e in range(start[i], start[i + 1]):
                    axis = axes[self._axis[e]]
                    sums[axis] += self._axis_value[e]
                    counts[axis] += 1
            stamps = (dates_of[self._published[i]] for i in idx)
            out.append(
                CaseScore(
                    model=model,
                    case_id=case_id,
                    score=sum(self._score[i] for i in idx) / n,
                    published=dates.get(case_id) or next((d for d in stamps if d), None),
                    per_axis={key: sums[key] / counts[key] for key in sorted(sums)},
                    coverage=sum(self._coverage[i] for i in idx) / n,
                    harm=sum(self._harm[i] for i in idx) / n,
                    failures=sum(self._failures[i] for i in idx),
                    samples=n,
                    answer_ids=tuple(sorted(self._answer[i] for i in idx)),
                )
            )
        return out


def case_scores(scores: Iterable[Score], case_dates: Mapping[str, datetime] | None = None) -> list[CaseScore]:
    """Average each model's scored samples per case; the case date comes from `case_dates`, else the Score."""
    rows = ScoreColumns()
    for s in scores:
        rows.add(
            model=s.model,
            case_id=s.case_id,
            answer_id=s.answer_id,
            judge=s.judge,
            score=s.score,
            coverage=s.coverage,
            harm=s.harm,
            failures=s.failures,
            per_axis=s.per_axis,
            published=s.published,
        )
    return rows.rows(case_dates)


def by_model(rows: Iterable[CaseScore]) -> dict[str, list[CaseScore]]:
    """Rows grouped by model, models sorted by name."""
    groups: dict[str, list[CaseScore]] = defaultdict(list)
    for row in rows:
        groups[row.model].append(row)
    return dict(sorted(groups.items()))
