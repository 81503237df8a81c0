"""The leaderboard: per model mean score with a bootstrap interval, per axis, coverage, harm, failures
(ranked by `common.stats.rank_models`, the one ranking: `leaderboard` over (model, case) rows, and
`scores_table`, the `livemed scores` rows over Score records or the `ScoreRow`s a scoring run keeps);
the breakdowns of `livemed scores --by`; and the paired comparison of two models on the cases both
answered."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from livemed.analysis.collect import ScoreSet
from livemed.analysis.completeness import Grading
from livemed.analysis.inputs import CaseScore, by_model
from livemed.common import stats
from livemed.common.stats import aggregate
from livemed.records import AXES, Score
from livemed.records.grading import canonical_theme
from livemed.score.rows import ScoreRow

Scores = Sequence[Score] | Sequence[ScoreRow]  # records, or the rows a scoring run keeps of them


class LeaderboardRow(BaseModel):
    rank: int
    model: str
    n_cases: int
    n_answers: int
    mean: float
    ci_low: float | None = Field(description="None when not computable (a single case)")
    ci_high: float | None
    per_axis: dict[str, float] = Field(default_factory=dict)
    coverage: float
    harm: float
    grade_failures: int
    convention: str = "livemed"
    judge: str | None = None
    failure_policy: str = "strict"
    answers_graded: int | None = Field(default=None, description="answers with a score (fully graded)")
    answers_total: int | None = Field(default=None, description="answers that could have one")
    complete: bool = Field(default=True, description="every answer of the model is graded")
    validity: str = Field(
        default="", description="the grader's validity card verdict for these grades, or 'unvalidated'"
    )
    validity_card: str = Field(default="", description="the id of that card ('' when unvalidated)")


class PairedComparison(BaseModel):
    model_a: str
    model_b: str
    n_shared: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None = Field(description="mean over shared cases of score(a) − score(b)")
    ci_low: float | None
    ci_high: float | None
    p_permutation: float | None = Field(description="two-sided sign-flip permutation p-value")
    wins_a: int
    wins_b: int
    ties: int
    n_a: int = Field(default=0, description="cases model a was scored on")
    n_b: int = Field(default=0, description="cases model b was scored on")

    def case_set_warning(self) -> str | None:
        """Why this comparison covers fewer cases than a model has, when the two case sets differ."""
        if self.n_a == self.n_shared and self.n_b == self.n_shared:
            return None
        return (
            f"{self.model_a} was scored on {self.n_a} case(s), {self.model_b} on {self.n_b}; "
            f"only the {self.n_shared} shared are compared"
        )


def _axis_means(rows: Sequence[CaseScore], convention: str) -> dict[str, float]:
    out = {}
    names = [a for a in AXES if any(a in r.per_axis for r in rows)]
    names += sorted({k for r in rows for k in r.per_axis} - set(names))
    for axis in names:
        values = [r.per_axis[axis] for r in rows if axis in r.per_axis]
        out[axis] = aggregate(values, convention)
    return out


def leaderboard(
    rows: Sequence[CaseScore],
    *,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
    convention: str = "livemed",
    judge: str | None = None,
    policy: str = "strict",
    grading: Mapping[str, Grading] | None = None,
) -> list[LeaderboardRow]:
    """One row per model, best mean first (ties broken by model name), with its grading completeness.

    The mean, its interval and the per-axis means follow the convention: under healthbench the case
    scores are unclipped and the mean (and each bootstrap resample's mean) is clipped to [0, 1]."""
    groups = by_model(rows)
    ranked = stats.rank_models(
        {model: [r.score for r in group] for model, group in groups.items()},
        convention,
        resamples=resamples,
        seed=seed,
        level=level,
    )
    table = []
    for rank, (model, summary) in enumerate(ranked, start=1):
        group = groups[model]
        table.append(
            LeaderboardRow(
                rank=rank,
                model=model,
                n_cases=len(group),
                n_answers=sum(r.samples for r in group),
                mean=summary.mean,
                ci_low=summary.ci_low,
                ci_high=summary.ci_high,
                per_axis=_axis_means(group, convention),
                coverage=float(np.mean([r.coverage for r in group])),
                harm=float(np.mean([r.harm for r in group])),
                grade_failures=sum(r.failures for r in group),
                convention=convention,
                judge=judge,
                failure_policy=policy,
                **_completeness((grading or {}).get(model)),
            )
        )
    return table


def ranked_leaderboard(
    scored: ScoreSet, *, resamples: int, seed: int, allow_incomplete: bool
) -> tuple[list[LeaderboardRow], list[CaseScore], list[Grading]]:
    """The leaderboard of a score set (`livemed leaderboard` and the report): its models whose answers
    are all graded (every model with `allow_incomplete`) ranked under its convention, judge and failure
    policy; with the rows ranked and the models left out."""
    ranked, left_out = scored.ranked(allow_incomplete)
    board = leaderboard(
        ranked,
        resamples=resamples,
        seed=seed,
        convention=scored.convention,
        judge=scored.judge,
        policy=scored.policy,
        grading=scored.grading,
    )
    return board, ranked, left_out


def scores_table(
    records: Scores, convention: str, *, seed: int = 0, resamples: int = stats.DEFAULT_RESAMPLES
) -> list[dict[str, Any]]:
    """`livemed scores`' rows, best first: per model the convention's aggregate of its per-case scores
    (`_per_case`) with the bootstrap CI and spread, and coverage, harm and failures over its answers."""
    groups: dict[str, list[Score | ScoreRow]] = defaultdict(list)
    for record in records:
        groups[record.model].append(record)
    ranked = stats.rank_models(
        {name: _per_case(group) for name, group in groups.items()}, convention, seed=seed, resamples=resamples
    )
    rows = []
    for name, summary in ranked:
        group = groups[name]
        rows.append(
            {
                "model": name,
                "convention": convention,
                "score": summary.mean,
                "ci_low": summary.ci_low,
                "ci_high": summary.ci_high,
                "bootstrap_std": summary.bootstrap_std,
                "n": summary.n,
                "coverage": sum(r.coverage for r in group) / len(group),
                "harm": sum(r.harm for r in group) / len(group),
                "failures": sum(r.failures for r in group),
            }
        )
    return rows


def _per_case(group: Sequence[Score | ScoreRow]) -> list[float]:
    """Each case's mean over its sampled answers, in case-id order: the values the analysis bootstraps."""
    cases: dict[str, list[float]] = defaultdict(list)
    for record in group:
        cases[record.case_id].append(record.score)
    return [sum(values) / len(values) for _, values in sorted(cases.items())]


BREAKDOWNS = ("axis", "theme", "tag")


def breakdown(
    records: Scores,
    by: Literal["axis", "theme", "tag"],
    convention: str,
    *,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> list[dict[str, Any]]:
    """Per model and axis, theme or HealthBench tag: the aggregate over the answers scored on it."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in records:
        per = {"axis": record.per_axis, "theme": record.per_theme, "tag": record.per_tag}[by]
        for name, value in per.items():  # themes of scores made before one spelling per theme, merged
            groups[(record.model, canonical_theme(name) if by == "theme" else name)].append(value)
    rows = []
    for (model, name), values in sorted(groups.items()):
        summary = stats.summarize(values, convention, seed=seed, resamples=resamples)
        assert summary is not None
        rows.append(
            {
                "model": model,
                by: name,
                "convention": convention,
                "score": summary.mean,
                "ci_low": summary.ci_low,
                "ci_high": summary.ci_high,
                "n": summary.n,
            }
        )
    return rows


def _completeness(grading: Grading | None) -> dict[str, Any]:
    if grading is None:
        return {}
    return {"answers_graded": grading.graded, "answers_total": grading.answers, "complete": grading.complete}


def compare(
    rows: Sequence[CaseScore],
    model_a: str,
    model_b: str,
    *,
    resamples: int = stats.DEFAULT_RESAMPLES,
    permutations: int = stats.DEFAULT_PERMUTATIONS,
    seed: int = 0,
    convention: str = "livemed",
) -> PairedComparison:
    """Paired bootstrap interval and sign-flip permutation p-value of a − b on shared cases.

    Not computable → None: every statistic with no shared case, the interval and the p-value with one.

    Under healthbench the difference is clip(mean a) − clip(mean b), in the estimate and in every
    resample; the permutation test works on the per-case differences."""
    a = {r.case_id: r.score for r in rows if r.model == model_a}
    b = {r.case_id: r.score for r in rows if r.model == model_b}
    shared = sorted(set(a) & set(b))
    xa = np.array([a[c] for c in shared], dtype=np.float64)
    xb = np.array([b[c] for c in shared], dtype=np.float64)
    d = xa - xb
    if not shared:
        return PairedComparison(
            model_a=model_a, model_b=model_b, n_shared=0, mean_a=None, mean_b=None, diff=None,
            ci_low=None, ci_high=None, p_permutation=None, wins_a=0, wins_b=0, ties=0, n_a=len(a), n_b=len(b),
        )  # fmt: skip
    if convention == "livemed":
        interval = stats.bootstrap_mean(d, resamples=resamples, seed=seed)
    else:
        interval = stats.bootstrap_paired_diff(xa, xb, resamples=resamples, seed=seed, convention=convention)
    return PairedComparison(
        model_a=model_a,
        model_b=model_b,
        n_shared=len(shared),
        mean_a=aggregate(list(xa), convention),
        mean_b=aggregate(list(xb), convention),
        diff=interval.estimate,
        ci_low=stats.finite_or_none(interval.low),
        ci_high=stats.finite_or_none(interval.high),
        p_permutation=stats.finite_or_none(stats.permutation_p_paired(d, resamples=permutations, seed=seed)),
        wins_a=int(np.sum(d > 0)),
        wins_b=int(np.sum(d < 0)),
        ties=int(np.sum(d == 0)),
        n_a=len(a),
        n_b=len(b),
    )
