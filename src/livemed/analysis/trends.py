"""Trends: each model's score by month of case publication, with the number of cases per month.

A month with fewer than `MIN_N_INTERVAL` cases gets its mean and n but no interval (`ci_low` and
`ci_high` are None, shown as "—"): a bootstrap of one to four scores gives an interval that is zero
wide or meaningless. `month_range` lists every calendar month from the first to the last one with a
case, so a chart can space months by date and show empty months as gaps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date

from pydantic import BaseModel

from livemed.analysis.inputs import CaseScore
from livemed.common import stats

MIN_N_INTERVAL = 5
"""Fewest cases in a (model, month) for which a 95% interval is given."""


class TrendRow(BaseModel):
    model: str
    month: str
    n: int
    mean: float
    ci_low: float | None  # None: fewer than MIN_N_INTERVAL cases that month (or not computable)
    ci_high: float | None


def month_of(row: CaseScore) -> str | None:
    return row.published.strftime("%Y-%m") if row.published is not None else None


def monthly(
    rows: Sequence[CaseScore], *, resamples: int = 1000, seed: int = 0, convention: str = "livemed"
) -> list[TrendRow]:
    """Mean score per (model, month) with a bootstrap interval, under the scoring convention (healthbench
    clips each mean); undated cases are left out, and months with fewer than `MIN_N_INTERVAL` cases get
    no interval."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        month = month_of(row)
        if month is not None:
            groups[(row.model, month)].append(row.score)
    out = []
    for (model, month), values in sorted(groups.items()):
        interval = stats.bootstrap_mean(values, resamples=resamples, seed=seed, convention=convention)
        enough = len(values) >= MIN_N_INTERVAL
        out.append(
            TrendRow(
                model=model,
                month=month,
                n=len(values),
                mean=interval.estimate,
                ci_low=stats.finite_or_none(interval.low) if enough else None,
                ci_high=stats.finite_or_none(interval.high) if enough else None,
            )
        )
    return out


def months(trend: Sequence[TrendRow]) -> list[str]:
    """Every month that has a case, in order."""
    return sorted({row.month for row in trend})


def month_number(month: str) -> int:
    """ "2024-03" as a count of months (year * 12 + month - 1), so months subtract."""
    year, number = month.split("-")
    return int(year) * 12 + int(number) - 1


def month_name(number: int) -> str:
    return f"{number // 12:04d}-{number % 12 + 1:02d}"


def month_range(trend: Sequence[TrendRow]) -> list[str]:
    """Every calendar month from the first to the last month with a case, empty months included."""
    present = [month_number(m) for m in months(trend)]
    return [month_name(n) for n in range(min(present), max(present) + 1)] if present else []


def month_position(day: date) -> float:
    """A date as a fractional month number (the 1st of March 2024 is month_number("2024-03"))."""
    return day.year * 12 + day.month - 1 + (day.day - 1) / 31
