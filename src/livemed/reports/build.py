"""Gather everything the report shows: read the store, call the analysis functions, lay out the charts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from livemed import __version__
from livemed.analysis.bimodality import BimodalityRow, score_distribution
from livemed.analysis.collect import ScoreSet, case_dates, load_scores
from livemed.analysis.completeness import Grading
from livemed.analysis.contamination import AnalysisSettings, ContaminationResult, analyse
from livemed.analysis.cutoffs import CutoffEntry
from livemed.analysis.funnel import FunnelRow, ReasonRow, store_funnel
from livemed.analysis.inputs import ScoreRef
from livemed.analysis.leaderboard import LeaderboardRow, PairedComparison, compare, ranked_leaderboard
from livemed.analysis.length import LengthRow, length_rows, stored_lengths
from livemed.analysis.provenance import (
    PromptRow,
    RunRow,
    UsageRow,
    runs_table,
    stored_prompt_hashes,
    usage_by_model,
)
from livemed.analysis.taxonomy import CriterionResult, DistributionRow, criterion_results, distribution
from livemed.analysis.trends import TrendRow, monthly
from livemed.analysis.window import Window, window_scoreset
from livemed.judges.reviewed import ReviewedView, report_view
from livemed.judges.tables import JudgesSection
from livemed.pipeline.runs import as_seen
from livemed.records import Answer, Case, ErrorLabel, Grade, Rubric, Run, utcnow
from livemed.reports.charts import (
    Chart,
    axes_chart,
    contamination_chart,
    funnel_chart,
    leaderboard_chart,
    outcomes_chart,
    taxonomy_chart,
    trends_chart,
)
from livemed.score.corrected import CorrectedScores
from livemed.store import Store


@dataclass
class AnswerView:
    model: str
    answer: Answer
    score: float | None
    results: tuple[CriterionResult, ...]
    label: ErrorLabel | None = None


@dataclass
class CaseView:
    case: Case
    rubric: Rubric | None
    answers: list[AnswerView]


@dataclass
class ReportData:
    title: str
    generated_at: datetime
    version: str
    store: str
    judge: str | None
    convention: str
    settings: AnalysisSettings
    leaderboard: list[LeaderboardRow]
    comparisons: list[PairedComparison]
    contamination: ContaminationResult
    trends: list[TrendRow]
    taxonomy: list[DistributionRow]
    funnel: list[FunnelRow]
    reasons: list[ReasonRow]
    runs: list[RunRow]
    usage: list[UsageRow]
    prompts: list[PromptRow]
    cases: list[CaseView]
    n_cases: int
    charts: dict[str, Chart] = field(default_factory=dict)
    policy: str = "strict"
    grading: list[Grading] = field(default_factory=list)
    not_ranked: list[Grading] = field(default_factory=list)
    score_distribution: list[BimodalityRow] = field(default_factory=list)
    length: list[LengthRow] = field(default_factory=list)  # answer length vs score, per model
    validity: str = ""  # the grader's validity card line (livemed.judges.cards), or "unvalidated"
    window: str = ""  # which cases count (`Window.describe`), when --min-date/--max-date/--after-cutoff
    judges: JudgesSection | None = None  # the stored judge runs (`judges report`'s tables), if any
    reviewed: ReviewedView | None = None  # the grader against the reviewers' labels, if it has a sample
    corrected: CorrectedScores | None = None  # scores corrected by reviewers' labels, when there are some
    corrected_note: str = ""  # why they are not shown although there are labels (a stale audit sample)
    rubric_version: str = (
        "writer"  # scores on the writer's rubrics, or on the reviewed ones (latest-approved)
    )

    @property
    def total_cost(self) -> float:
        return sum(u.cost_usd for u in self.usage)


def build_report(
    store: Store,
    registry: Mapping[str, CutoffEntry],
    *,
    settings: AnalysisSettings | None = None,
    judge: str | None = None,
    convention: str = "livemed",
    policy: str = "strict",
    max_cases: int = 100,
    title: str = "livemed report",
    allow_incomplete: bool = False,
    window: Window | None = None,
    rubric_version: str = "writer",
) -> ReportData:
    """Everything the HTML report shows, computed by the analysis functions from the store.

    Models whose answers are not all graded are left out of the leaderboard and its comparisons
    (`not_ranked`) unless `allow_incomplete`. `rubric_version`: the scores on the writer's rubrics
    (default), or those `scores --rubric-version latest-approved` made on the reviewed ones."""
    s = (settings or AnalysisSettings()).model_copy(update={"convention": convention})
    scored = load_scores(
        store, judge=judge, convention=convention, policy=policy, rubric_version=rubric_version
    )
    if window is not None:  # --min-date/--max-date/--after-cutoff
        scored = window_scoreset(store, scored, window)
    dates = case_dates(store)  # every case's date only: whole Cases are read for the shown ones
    board, ranked, not_ranked = ranked_leaderboard(
        scored, resamples=s.resamples, seed=s.seed, allow_incomplete=allow_incomplete
    )
    comparisons = [
        compare(
            ranked,
            board[0].model,
            row.model,
            resamples=s.resamples,
            permutations=s.permutations,
            seed=s.seed,
            convention=convention,
        )
        for row in board[1:]
    ]
    trend = monthly(scored.rows, seed=s.seed, convention=convention)
    labels = list(store.iter(ErrorLabel))
    runs = [as_seen(run) for run in store.iter(Run)]  # a killed one as interrupted
    funnel_rows, reasons = store_funnel(store, (row.case_id for row in scored.rows))
    data = ReportData(
        title=title, generated_at=utcnow(), version=__version__, store=store.location,
        judge=scored.judge, convention=convention, settings=s, leaderboard=board, comparisons=comparisons,
        contamination=analyse(scored.rows, registry, s), trends=trend, taxonomy=distribution(labels),
        funnel=funnel_rows, reasons=reasons, runs=runs_table(runs), usage=usage_by_model(runs),
        prompts=_prompts(store), cases=_case_views(store, dates, scored, labels, max_cases),
        n_cases=len(dates), policy=policy, grading=list(scored.grading.values()), not_ranked=not_ranked,
        score_distribution=score_distribution(scored.scores),
        window=window.describe() if window is not None and window.active else "",
        rubric_version=rubric_version,
    )  # fmt: skip
    models = {row.model for row in ranked}
    scores = [score for score in scored.scores if score.model in models]
    data.length = length_rows(stored_lengths(store, (score.answer_id for score in scores)), scores)
    data.judges = judges_section(store)
    data.reviewed = report_view(store, scored.judge)
    if rubric_version == "writer":  # the audit sample's verdicts are on the writer's criteria
        data.corrected, data.corrected_note = corrected_section(
            store, scored.judge, {score.answer_id for score in scores}
        )
    data.charts = _charts(data)
    from livemed.judges.cards import card_line

    data.validity = (
        card_line(store, scored.judge, (score.answer_id for score in scored.scores)) if scored.judge else ""
    )
    return data


def corrected_section(
    store: Store, judge: str | None, answer_ids: set[str]
) -> tuple[CorrectedScores | None, str]:
    """The ranked models' scores corrected by the labels on `judge`'s audit sample (`score.corrected`);
    (None, '') without labels, (None, why) when the sample cannot correct them."""
    from livemed.errors import UserError
    from livemed.score.corrected import corrected_scores, has_audit_labels

    if judge is None or not has_audit_labels(store, judge):
        return None, ""
    try:
        return corrected_scores(store, judge, answer_ids=answer_ids), ""
    except UserError as exc:
        return None, str(exc)


def judges_section(store: Store, policy: str = "separate") -> JudgesSection | None:
    """`judges report`'s tables and Figures 1–2 of every stored judge run; None when there is none."""
    from livemed.judges.results import load_results
    from livemed.judges.tables import section

    results = load_results(store, None, None, policy)
    return section(results, policy) if results else None


def _judges_charts(section: JudgesSection | None) -> dict[str, Chart]:
    if section is None:
        return {}
    charts = {"judges_datasets": outcomes_chart(section.by_dataset, "Figure 1 · Judge samples per dataset")}
    if section.by_tertile:
        title = "Figure 2 · Judge samples per rank-gap tertile (Hard = smallest gaps)"
        charts["judges_tertiles"] = outcomes_chart(section.by_tertile, title)
    return charts


def _charts(data: ReportData) -> dict[str, Chart]:
    models = [row.model for row in data.leaderboard]
    cutoffs = {row.model: row.cutoff for row in data.contamination.rows if row.cutoff is not None}
    return _judges_charts(data.judges) | {
        "leaderboard": leaderboard_chart(data.leaderboard),
        "axes": axes_chart(data.leaderboard),
        "contamination": contamination_chart(data.contamination.rows),
        "trends": trends_chart(data.trends, models, cutoffs),
        "taxonomy": taxonomy_chart(data.taxonomy),
        "funnel": funnel_chart(data.funnel),
    }


def _prompts(store: Store) -> list[PromptRow]:
    return stored_prompt_hashes(store, [cls.kind for cls in (Case, Rubric, Answer, Grade, ErrorLabel)])


def _case_views(
    store: Store, dates: Mapping[str, datetime], scored: ScoreSet, labels: list[ErrorLabel], max_cases: int
) -> list[CaseView]:
    """The most recent scored cases, each with its rubric and every model's graded answer."""
    by_case: dict[str, list[ScoreRef]] = defaultdict(list)
    for score in scored.scores:
        by_case[score.case_id].append(score)
    label_of = {
        label.answer_id: label for label in sorted(labels, key=lambda x: x.method == "llm")
    }  # LLM wins
    chosen = sorted((c for c in dates if c in by_case), key=lambda c: (dates[c], c), reverse=True)[:max_cases]
    cases = store.get_many(Case, chosen)
    views = []
    for case in (cases[c] for c in chosen):
        rubric = store.get(Rubric, f"rubric:{case.id}")
        answers = []
        for score in sorted(by_case[case.id], key=lambda s: (s.model, s.answer_id)):
            answer = store.get(Answer, score.answer_id)
            if answer is None:
                continue
            grades = [g for g in store.iter(Grade, parent_id=answer.id) if g.judge == score.judge]
            results = criterion_results(rubric, grades) if rubric is not None else ()
            answers.append(AnswerView(score.model, answer, score.score, results, label_of.get(answer.id)))
        views.append(CaseView(case, rubric, answers))
    return views
