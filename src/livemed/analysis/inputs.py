"""From Score records to one score per (model, case): the unit every analysis works on.

A model may have several sampled answers per case and several judges may have scored them. The
analyses use one judge, one scoring convention and one failure policy at a time (never a mix), and
average a model's samples on a case, so every case weighs the same.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from livemed.records import Score


@dataclass(frozen=True)
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


def judges(scores: Iterable[Score], convention: str = "livemed", policy: str = "not-met") -> list[str]:
    """The judges that produced scores under a convention and failure policy, sorted."""
    return sorted({s.judge for s in scores if s.convention == convention and s.failure_policy == policy})


def select(
    scores: Iterable[Score], *, judge: str | None, convention: str = "livemed", policy: str = "not-met"
) -> list[Score]:
    """Scores of one convention and one failure policy, and of one judge when given."""
    return [
        s
        for s in scores
        if s.convention == convention and s.failure_policy == policy and (judge is None or s.judge == judge)
    ]


def case_scores(scores: Iterable[Score], case_dates: Mapping[str, datetime] | None = None) -> list[CaseScore]:
    """Average each model's scored samples per case; the case date comes from `case_dates`, else the Score."""
    groups: dict[tuple[str, str], list[Score]] = defaultdict(list)
    for score in scores:
        groups[(score.model, score.case_id)].append(score)
    dates = case_dates or {}
    out = []
    for (model, case_id), group in sorted(groups.items()):
        n = len(group)
        published = dates.get(case_id) or next((s.published for s in group if s.published), None)
        out.append(
            CaseScore(
                model=model,
                case_id=case_id,
                score=sum(s.score for s in group) / n,
                published=published,
                per_axis=_mean_dicts([s.per_axis for s in group]),
                coverage=sum(s.coverage for s in group) / n,
                harm=sum(s.harm for s in group) / n,
                failures=sum(s.failures for s in group),
                samples=n,
                answer_ids=tuple(sorted(s.answer_id for s in group)),
            )
        )
    return out


def by_model(rows: Iterable[CaseScore]) -> dict[str, list[CaseScore]]:
    """Rows grouped by model, models sorted by name."""
    groups: dict[str, list[CaseScore]] = defaultdict(list)
    for row in rows:
        groups[row.model].append(row)
    return dict(sorted(groups.items()))


def _mean_dicts(dicts: list[Mapping[str, float]]) -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for d in dicts:
        for key, value in d.items():
            sums[key] += value
            counts[key] += 1
    return {key: sums[key] / counts[key] for key in sorted(sums)}
