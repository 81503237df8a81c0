"""Trends: each model's score by month of case publication, with the number of cases per month."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel

from livemed.analysis import stats
from livemed.analysis.inputs import CaseScore


class TrendRow(BaseModel):
    model: str
    month: str
    n: int
    mean: float
    ci_low: float | None  # None: not computable (one case that month)
    ci_high: float | None


def month_of(row: CaseScore) -> str | None:
    return row.published.strftime("%Y-%m") if row.published is not None else None


def monthly(
    rows: Sequence[CaseScore], *, resamples: int = 1000, seed: int = 0, convention: str = "livemed"
) -> list[TrendRow]:
    """Mean score per (model, month) with a bootstrap interval, under the scoring convention (healthbench
    clips each mean); undated cases are left out."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        month = month_of(row)
        if month is not None:
            groups[(row.model, month)].append(row.score)
    out = []
    for (model, month), values in sorted(groups.items()):
        interval = stats.bootstrap_mean(values, resamples=resamples, seed=seed, convention=convention)
        out.append(
            TrendRow(
                model=model,
                month=month,
                n=len(values),
                mean=interval.estimate,
                ci_low=stats.finite_or_none(interval.low),
                ci_high=stats.finite_or_none(interval.high),
            )
        )
    return out


def months(trend: Sequence[TrendRow]) -> list[str]:
    """Every month that has a case, in order."""
    return sorted({row.month for row in trend})
