"""Which cases an evaluation counts: publication dates, each model's own training cutoff, a release.

`--min-date/--max-date` keep the cases published on those days or between them; `--after-cutoff` keeps,
for each model, only the cases published after its training cutoff (from the cutoff registry): the
contamination-resistant view. A model with no cutoff in the registry has no post-cutoff cases (it is
named in `Window.no_cutoff`, never silently scored on everything). `--release NAME` keeps the cases of
that release. An undated case is outside every date window.

```python
window = Window(min_date=date(2025, 1, 1), cutoffs={"openai/gpt-4o": date(2023, 10, 1)})
kept = window.scores(scores, case_dates)
grading = window.grading(store, kept, case_dates)      # completeness over the same cases
```
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import TypeVar

from pydantic import BaseModel, Field

from livemed.analysis.collect import ScoreSet, case_dates
from livemed.analysis.completeness import ANSWER_OF, Grading, count, scorable_cases
from livemed.analysis.cutoffs import CutoffEntry, find_cutoff
from livemed.analysis.inputs import Scored
from livemed.analysis.leaderboard import LeaderboardRow
from livemed.score.stage import ScoreRun
from livemed.store import Store

S = TypeVar("S", bound=Scored)


@dataclass(frozen=True)
class Window:
    min_date: date | None = None
    max_date: date | None = None
    cutoffs: Mapping[str, date | None] | None = (
        None  # with --after-cutoff: model -> its cutoff (None: unknown)
    )
    case_ids: frozenset[str] | None = None  # a release's cases
    release: str | None = None

    @property
    def active(self) -> bool:
        return any(x is not None for x in (self.min_date, self.max_date, self.cutoffs, self.case_ids))

    def keeps(self, model: str, case_id: str, published: datetime | None) -> bool:
        if self.case_ids is not None and case_id not in self.case_ids:
            return False
        if self.min_date is None and self.max_date is None and self.cutoffs is None:
            return True
        if published is None:
            return False
        day = published.astimezone(UTC).date()
        if (self.min_date and day < self.min_date) or (self.max_date and day > self.max_date):
            return False
        if self.cutoffs is None:
            return True
        cutoff = self.cutoffs.get(model)
        return cutoff is not None and day > cutoff

    def no_cutoff(self, models: Iterable[str]) -> list[str]:
        """The models `--after-cutoff` cannot evaluate: no cutoff in the registry."""
        if self.cutoffs is None:
            return []
        return sorted({m for m in models if self.cutoffs.get(m) is None})

    def with_cutoffs(self, models: Iterable[str], registry: dict[str, CutoffEntry]) -> Window:
        """This window with each model's cutoff looked up (exact names, `analysis.cutoffs.find_cutoff`)."""
        found = {m: (hit[1].cutoff if (hit := find_cutoff(m, registry)) else None) for m in models}
        return replace(self, cutoffs=found)

    def describe(self) -> str:
        parts = []
        if self.release is not None:
            parts.append(f"release {self.release}")
        if self.min_date or self.max_date:
            parts.append(f"published {self.min_date or '…'} → {self.max_date or '…'}")
        if self.cutoffs is not None:
            parts.append("each model after its own training cutoff")
        return "cases: " + (", ".join(parts) if parts else "all")

    def scores(self, scores: Iterable[S], case_dates: Mapping[str, datetime]) -> list[S]:
        """The scores of the cases this window keeps for their model."""
        return [s for s in scores if self.keeps(s.model, s.case_id, case_dates.get(s.case_id) or s.published)]

    def grading(
        self,
        store: Store,
        scores: Sequence[Scored],
        case_dates: Mapping[str, datetime],
        models: Collection[str],
    ) -> dict[str, Grading]:
        """`completeness.grading_by_model` over this window's cases: scored answers out of the answers
        (of `models`) whose case is in the window and has a scorable rubric."""
        scorable = scorable_cases(store)
        answers: Counter[str] = Counter()
        for _, answer in store.fields("answer", ANSWER_OF):
            model, case_id = answer["model"], answer["case_id"]
            in_window = self.keeps(model, case_id, case_dates.get(case_id))
            if model in models and case_id in scorable and in_window:
                answers[model] += 1
        return count(answers, scores)


def window_scoreset(store: Store, scored: ScoreSet, window: Window) -> ScoreSet:
    """A ScoreSet (leaderboard, report) narrowed to the window's cases, its completeness recounted."""
    if not window.active:
        return scored
    dates = case_dates(store)
    kept = window.scores(scored.scores, dates)
    rows = [r for r in scored.rows if window.keeps(r.model, r.case_id, r.published)]
    grading = window.grading(store, kept, dates, {s.model for s in scored.scores})
    return replace(scored, scores=kept, rows=rows, grading=grading)


def window_run(store: Store, run: ScoreRun, window: Window) -> ScoreRun:
    """A scoring run (`scores`, `eval`) narrowed to the window's cases, its answers recounted."""
    if not window.active:
        return run
    dates = case_dates(store)
    kept = window.scores(run.scores, dates)
    grading = window.grading(store, kept, dates, set(run.answers) | {s.model for s in run.scores})
    answers = Counter({m: g.answers for m, g in grading.items()})
    return replace(run, scores=kept, answers=answers)  # the unusable shares and their limit kept


ALL_MINUS_POST = (
    "all_minus_post = all-cases mean − post-cutoff mean, the sign of the contamination table's full − post "
    "(positive: lower after the cutoff)"
)


class CutoffComparison(BaseModel):
    """One model on all the window's cases and on its post-cutoff cases only, side by side."""

    model: str
    cutoff: date | None
    cutoff_source: str | None = None
    simulated: bool = Field(default=False, description="the cutoff is a simulation's, not a real model's")
    all_cases: int
    all_mean: float
    all_ci_low: float | None
    all_ci_high: float | None
    post_cases: int
    post_mean: float | None
    post_ci_low: float | None
    post_ci_high: float | None
    all_minus_post: float | None = Field(description=ALL_MINUS_POST)


class ByCutoffSummary(BaseModel):
    """The side-by-side table's summary: its sign convention, and which cutoffs are simulations'."""

    difference: str = ALL_MINUS_POST
    n_models: int
    no_cutoff: list[str] = Field(description="models with no cutoff in the registry: no post-cutoff cases")
    simulated: list[str] = Field(description="models whose cutoff is a simulation's, not a real model's")


def by_cutoff(
    all_rows: Sequence[LeaderboardRow],
    post_rows: Sequence[LeaderboardRow],
    registry: dict[str, CutoffEntry],
) -> list[CutoffComparison]:
    """The method's comparison: each ranked model's all-cases row beside its post-cutoff row, each
    model's cutoff from `registry` (as `Window.with_cutoffs` found it)."""
    post = {r.model: r for r in post_rows}
    out = []
    for row in all_rows:
        p = post.get(row.model)
        found = find_cutoff(row.model, registry)
        entry = found[1] if found else None
        out.append(
            CutoffComparison(
                model=row.model,
                cutoff=entry.cutoff if entry else None,
                cutoff_source=entry.source if entry else None,
                simulated=bool(entry and entry.simulated),
                all_cases=row.n_cases,
                all_mean=row.mean,
                all_ci_low=row.ci_low,
                all_ci_high=row.ci_high,
                post_cases=p.n_cases if p else 0,
                post_mean=p.mean if p else None,
                post_ci_low=p.ci_low if p else None,
                post_ci_high=p.ci_high if p else None,
                all_minus_post=(row.mean - p.mean) if p else None,
            )
        )
    return out


def by_cutoff_summary(rows: Sequence[CutoffComparison]) -> ByCutoffSummary:
    return ByCutoffSummary(
        n_models=len(rows),
        no_cutoff=[r.model for r in rows if r.cutoff is None],
        simulated=[r.model for r in rows if r.simulated],
    )
