"""Contamination analysis: does a model score lower on cases published after its training cutoff?

Per model with a known cutoff C (see `cutoffs.py`):

- the method's comparison: mean on the full set vs mean on the post-cutoff subset (delta = full − post);
- the pre- vs post-cutoff split: delta = pre − post, with a bootstrap interval, a one-sided
  Mann–Whitney U p-value and a one-sided permutation p-value (H1: pre > post), and Cliff's delta;
- fewer than `min_post` post-cutoff cases (the method says 50), or fewer than `min_pre` pre-cutoff
  cases, gives status "insufficient data" and no verdict;
- drift control: models whose cutoff lies outside the cases' date range (before every case: saw
  none; after every case: saw all) split at the same C show how much harder newer cases are.
  The difference-in-differences (per case, tested model minus the controls' mean, then pre − post)
  removes that drift; a drop whose drift-adjusted interval includes 0 is not called contamination;
- a cutoff whose source starts with "simulation" (the demo's simulated baselines, `answer/simulation.py`)
  marks its row `simulated` and its note says so, in every view;
- across tested models the pre > post p-values (Mann–Whitney) are corrected with Benjamini–Hochberg;
  a significant drop is BH q < alpha with the pre − post interval above 0, and the share of models with
  one is reported;
- the verdict's words follow the intervals (`verdict_words`): with a significant drop, the drift-adjusted
  interval above 0 is a "contamination signal", including 0 "drop not distinguishable from drift",
  below 0 "drop smaller than drift"; "explained by drift" only when the pre − post interval includes 0
  and the drift-adjusted one (pre − post less the controls' pre − post) excludes it.

Means, their intervals and the two deltas follow `settings.convention` (under healthbench each mean,
and each resampled mean, is clipped to [0, 1], as simple-evals does); the rank and permutation tests,
Cliff's delta and the drift control work on the per-case scores (unclipped under healthbench).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from livemed.analysis.cutoffs import CutoffEntry, find_cutoff
from livemed.analysis.inputs import CaseScore, by_model
from livemed.common import closed_form, stats
from livemed.common.stats import aggregate

Status = Literal["tested", "insufficient data", "control", "no cutoff"]
Side = Literal["above 0", "includes 0", "below 0"]
"""Where an interval lies with respect to 0."""

SIGNAL = "contamination signal"
NOT_BEYOND_DRIFT = "drop not distinguishable from drift"
SMALLER_THAN_DRIFT = "drop smaller than drift"
NO_CONTROL = "significant drop (no drift control)"
EXPLAINED = "explained by drift"
NOT_DISTINGUISHABLE = "not distinguishable"
NO_DROP = "no significant drop"
_DROP: dict[Side | None, str] = {
    "above 0": SIGNAL,
    "includes 0": NOT_BEYOND_DRIFT,
    "below 0": SMALLER_THAN_DRIFT,
    None: NO_CONTROL,
}
"""A significant drop's verdict, by its drift-adjusted interval (None: no drift control)."""


class ContaminationRow(BaseModel):
    model: str
    cutoff: date | None = None
    cutoff_key: str | None = None
    cutoff_source: str | None = None
    simulated: bool = Field(default=False, description="the cutoff is a simulation's, not a real model's")
    status: Status
    control_kind: Literal["before every case", "after every case"] | None = None
    n_full: int = 0
    n_pre: int = 0
    n_post: int = 0
    mean_full: float | None = None
    full_low: float | None = None
    full_high: float | None = None
    mean_pre: float | None = None
    mean_post: float | None = None
    post_low: float | None = None
    post_high: float | None = None
    full_minus_post: float | None = None
    full_minus_post_low: float | None = None
    full_minus_post_high: float | None = None
    pre_minus_post: float | None = None
    pre_minus_post_low: float | None = None
    pre_minus_post_high: float | None = None
    p_mannwhitney: float | None = None
    p_permutation: float | None = None
    q_value: float | None = Field(default=None, description="Benjamini–Hochberg adjusted Mann–Whitney p")
    cliffs_delta: float | None = None
    n_controls: int = 0
    drift: float | None = Field(default=None, description="controls' pre − post at this cutoff")
    drift_low: float | None = None
    drift_high: float | None = None
    p_drift: float | None = Field(default=None, description="one-sided permutation p of the controls' drop")
    adjusted: float | None = Field(default=None, description="difference-in-differences vs the controls")
    adjusted_low: float | None = None
    adjusted_high: float | None = None
    significant: bool | None = None
    verdict: str | None = None
    note: str = ""


class ContaminationSummary(BaseModel):
    n_models: int
    n_tested: int
    n_significant: int
    share_significant: float | None
    n_signal: int
    alpha: float
    min_post: int
    controls: list[str]
    simulated: list[str] = Field(
        default_factory=list, description="models whose cutoff is a simulation's, not a real model's"
    )


class ContaminationResult(BaseModel):
    rows: list[ContaminationRow]
    summary: ContaminationSummary


class AnalysisSettings(BaseModel):
    """Settings shared by the analyses: guards, false discovery rate, resampling, seed."""

    min_post: int = 50
    min_pre: int = 10
    alpha: float = 0.05
    resamples: int = stats.DEFAULT_RESAMPLES
    permutations: int = stats.DEFAULT_PERMUTATIONS
    seed: int = 0
    convention: str = "livemed"


def _opt(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _day(moment: datetime) -> date:
    return moment.date()


def _split(rows: Sequence[CaseScore], cutoff: date) -> tuple[list[float], list[float]]:
    pre = [r.score for r in rows if r.published is not None and _day(r.published) <= cutoff]
    post = [r.score for r in rows if r.published is not None and _day(r.published) > cutoff]
    return pre, post


def _base_row(
    model: str, rows: Sequence[CaseScore], found: tuple[str, CutoffEntry], s: AnalysisSettings
) -> ContaminationRow:
    key, entry = found
    dated = [r for r in rows if r.published is not None]
    pre, post = _split(dated, entry.cutoff)
    row = ContaminationRow(
        model=model, cutoff=entry.cutoff, cutoff_key=key, cutoff_source=entry.source, status="tested",
        simulated=entry.simulated,
        n_full=len(dated), n_pre=len(pre), n_post=len(post),
        mean_pre=aggregate(pre, s.convention) if pre else None,
    )  # fmt: skip
    if dated:
        full = stats.bootstrap_mean(
            [r.score for r in dated], resamples=s.resamples, seed=s.seed, convention=s.convention
        )
        row.mean_full, row.full_low, row.full_high = full.estimate, _opt(full.low), _opt(full.high)
    if post:
        sub = stats.bootstrap_mean(post, resamples=s.resamples, seed=s.seed, convention=s.convention)
        row.mean_post, row.post_low, row.post_high = sub.estimate, _opt(sub.low), _opt(sub.high)
    if row.mean_full is not None and row.mean_post is not None:
        row.full_minus_post = row.mean_full - row.mean_post
    return row


def _classify(row: ContaminationRow, case_range: tuple[date, date], settings: AnalysisSettings) -> None:
    first, last = case_range
    assert row.cutoff is not None
    if row.cutoff >= last:
        row.status, row.control_kind = "control", "after every case"
        row.note = "cutoff after every case: all cases may have been seen; used as a drift control"
    elif row.cutoff < first:
        row.status, row.control_kind = "control", "before every case"
        row.note = "cutoff before every case: no case can have been seen; used as a drift control"
    elif row.n_post < settings.min_post or row.n_pre < settings.min_pre:
        row.status = "insufficient data"
        row.note = (
            f"{row.n_post} post-cutoff and {row.n_pre} pre-cutoff cases; at least {settings.min_post} "
            f"and {settings.min_pre} are needed for a verdict"
        )


def _test(row: ContaminationRow, rows: Sequence[CaseScore], settings: AnalysisSettings) -> None:
    assert row.cutoff is not None
    dated = [r for r in rows if r.published is not None]
    pre, post = _split(dated, row.cutoff)
    is_post = [r.published is not None and _day(r.published) > row.cutoff for r in dated]
    seed, n, conv = settings.seed, settings.resamples, settings.convention
    full = stats.bootstrap_full_minus_subset(
        [r.score for r in dated], is_post, resamples=n, seed=seed, convention=conv
    )
    row.full_minus_post_low, row.full_minus_post_high = _opt(full.low), _opt(full.high)
    split = stats.bootstrap_diff(pre, post, resamples=n, seed=seed, convention=conv)
    row.pre_minus_post = split.estimate
    row.pre_minus_post_low, row.pre_minus_post_high = _opt(split.low), _opt(split.high)
    row.p_mannwhitney = _opt(closed_form.mann_whitney_greater(pre, post))
    row.p_permutation = _opt(
        stats.permutation_p_independent(pre, post, resamples=settings.permutations, seed=seed)
    )
    row.cliffs_delta = _opt(closed_form.cliffs_delta(pre, post))


def _drift(
    row: ContaminationRow,
    rows: Sequence[CaseScore],
    controls: Mapping[str, Sequence[CaseScore]],
    s: AnalysisSettings,
) -> None:
    """Difference-in-differences against the controls' per-case mean, split at this model's cutoff."""
    assert row.cutoff is not None
    per_case: dict[str, list[float]] = {}
    for control_rows in controls.values():
        for r in control_rows:
            per_case.setdefault(r.case_id, []).append(r.score)
    if not per_case:
        return
    row.n_controls = len(controls)
    pre_d: list[float] = []
    post_d: list[float] = []
    pre_c: list[float] = []
    post_c: list[float] = []
    for r in rows:
        if r.published is None or r.case_id not in per_case:
            continue
        control = float(np.mean(per_case[r.case_id]))
        is_post = _day(r.published) > row.cutoff
        (post_d if is_post else pre_d).append(r.score - control)
        (post_c if is_post else pre_c).append(control)
    if len(pre_d) < 2 or len(post_d) < 2:
        row.note = "too few cases shared with the drift controls"
        return
    drift = stats.bootstrap_diff(pre_c, post_c, resamples=s.resamples, seed=s.seed)
    row.drift, row.drift_low, row.drift_high = drift.estimate, _opt(drift.low), _opt(drift.high)
    row.p_drift = _opt(stats.permutation_p_independent(pre_c, post_c, resamples=s.permutations, seed=s.seed))
    did = stats.bootstrap_diff(pre_d, post_d, resamples=s.resamples, seed=s.seed)
    row.adjusted, row.adjusted_low, row.adjusted_high = did.estimate, _opt(did.low), _opt(did.high)


ROUNDING = 1e-12
"""An interval end this close to 0 is 0: a mean of equal scores may come out as −1e-16."""


def side(low: float | None, high: float | None) -> Side | None:
    """Whether an interval lies above 0, below 0 or includes 0 (None: no interval)."""
    if low is None or high is None:
        return None
    if low > ROUNDING:
        return "above 0"
    return "below 0" if high < -ROUNDING else "includes 0"


def verdict_words(raw: Side | None, adjusted: Side | None, q_significant: bool) -> str:
    """A tested model's verdict from its pre − post interval (`raw`), its drift-adjusted interval
    (`adjusted`, None without drift controls) and whether its BH q is below alpha.

    A significant drop (q below alpha, raw interval above 0) is judged by the adjusted interval
    (`_DROP`). Without one, "explained by drift" only when the raw interval includes 0 and the
    adjusted one excludes it; "not distinguishable" when the rank test and the raw interval disagree
    (q below alpha, interval including 0) or the raw interval is missing; else "no significant drop".
    """
    if raw == "above 0" and q_significant:
        return _DROP[adjusted]
    if raw == "includes 0" and adjusted in ("above 0", "below 0"):
        return EXPLAINED
    if raw is None or (raw == "includes 0" and q_significant):
        return NOT_DISTINGUISHABLE
    return NO_DROP


def _verdict(row: ContaminationRow, alpha: float) -> None:
    raw = side(row.pre_minus_post_low, row.pre_minus_post_high)
    q_significant = row.q_value is not None and row.q_value < alpha
    row.significant = raw == "above 0" and q_significant
    adjusted = side(row.adjusted_low, row.adjusted_high) if row.adjusted is not None else None
    row.verdict = verdict_words(raw, adjusted, q_significant)


def analyse(
    rows: Sequence[CaseScore], registry: Mapping[str, CutoffEntry], settings: AnalysisSettings | None = None
) -> ContaminationResult:
    """The contamination table for every model in `rows`, and the across-model summary."""
    s = settings or AnalysisSettings()
    groups = by_model(rows)
    dates = [_day(r.published) for r in rows if r.published is not None]
    out: list[ContaminationRow] = []
    for model, group in groups.items():
        found = find_cutoff(model, dict(registry))
        if found is None or not dates:
            note = "no training cutoff registered for this model" if found is None else "no dated cases"
            out.append(ContaminationRow(model=model, status="no cutoff", n_full=len(group), note=note))
            continue
        row = _base_row(model, group, found, s)
        _classify(row, (min(dates), max(dates)), s)
        out.append(row)
    controls = {r.model: groups[r.model] for r in out if r.status == "control"}
    tested = [r for r in out if r.status == "tested"]
    for row in tested:
        _test(row, groups[row.model], s)
        _drift(row, groups[row.model], controls, s)
    for row, q in zip(
        tested, closed_form.benjamini_hochberg([_nan(r.p_mannwhitney) for r in tested]), strict=True
    ):
        row.q_value = _opt(q)
        _verdict(row, s.alpha)
    for row in out:
        if row.simulated:
            row.note = "; ".join(
                n for n in ("SIMULATION: a declared cutoff, not a real model's", row.note) if n
            )
    return ContaminationResult(rows=out, summary=_summary(out, s, sorted(controls)))


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _summary(rows: list[ContaminationRow], s: AnalysisSettings, controls: list[str]) -> ContaminationSummary:
    tested = [r for r in rows if r.status == "tested"]
    significant = [r for r in tested if r.significant]
    return ContaminationSummary(
        n_models=len(rows),
        n_tested=len(tested),
        n_significant=len(significant),
        share_significant=len(significant) / len(tested) if tested else None,
        n_signal=sum(r.verdict == SIGNAL for r in tested),
        alpha=s.alpha,
        min_post=s.min_post,
        controls=controls,
        simulated=[r.model for r in rows if r.simulated],
    )
