"""Rich tables for the analysis commands (the numbers come from `livemed.analysis`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from livemed.cli.context import console
from livemed.cli.fitted import Cell, Column, fitted

if TYPE_CHECKING:  # the analysis modules import scipy: keep `livemed --help` fast
    from livemed.analysis.completeness import Grading
    from livemed.analysis.contamination import ContaminationResult
    from livemed.analysis.funnel import FunnelRow, ReasonRow
    from livemed.analysis.leaderboard import LeaderboardRow, PairedComparison
    from livemed.analysis.taxonomy import DistributionRow
    from livemed.analysis.trends import TrendRow


LEADERBOARD_FILES = "leaderboard.csv/.json, written below"
_WRAPPABLE = frozenset({"status", "verdict", "classifier"})  # words that may wrap; numbers and ids never


def num(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "—"
    return f"{value:.{digits}f}"


def interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """`0.412–0.655`, or `—` when the interval is not computable (too few cases)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "—"
    return f"{low:.{digits}f}–{high:.{digits}f}"


def pval(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _table(title: str, columns: Sequence[str], left: int = 1, *, compact: bool = False) -> Table:
    """A table whose "model" and number columns never wrap: the text columns (status, verdict) give way.

    `compact`: no outer border and narrow gaps between columns, for tables with many columns.
    """
    table = (
        Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
        if compact
        else Table(title=title)
    )
    for i, column in enumerate(columns):
        text = i < left or column in _WRAPPABLE
        table.add_column(column, justify="left" if text else "right", no_wrap=column not in _WRAPPABLE)
    return table


LEADERBOARD_KEPT = ("#", "model", "mean", "95% CI", "cases", "graded", "failures")


def leaderboard_table(
    rows: Sequence[LeaderboardRow], out: Console | None = None, *, elsewhere: str = LEADERBOARD_FILES
) -> RenderableType:
    """The leaderboard in the terminal's width: model names wrap, and the per-axis columns, then coverage
    and harm, give way (named in a line under it); rank, mean, interval, counts and failures stay."""
    axes: list[str] = []
    for row in rows:
        axes.extend(a for a in row.per_axis if a not in axes)
    names = ["#", "model", "mean", "95% CI", "cases", "graded", "failures", "harm", "coverage", *axes]
    columns = [Column(n, keep=n in LEADERBOARD_KEPT, wrap=n == "model", left=n == "#") for n in names]
    cells: list[list[Cell]] = [
        [
            str(row.rank), Text(row.model), num(row.mean), interval(row.ci_low, row.ci_high),
            str(row.n_cases), graded_cell(row.answers_graded, row.answers_total), str(row.grade_failures),
            num(row.harm, 2), num(row.coverage), *(num(row.per_axis.get(a), 2) for a in axes),
        ]
        for row in rows
    ]  # fmt: skip
    return fitted(out or console, "leaderboard", columns, cells, elsewhere=elsewhere)


def graded_cell(graded: int | None, total: int | None) -> str:
    """`12/12`, or `9/12 ⚠` (red) for a model whose grading is incomplete."""
    if graded is None or total is None:
        return "-"
    return f"{graded}/{total}" if graded >= total else f"[red]{graded}/{total} ⚠[/]"


def grading_table(grading: Sequence[Grading]) -> Table:
    """Answers graded out of the answers that exist, per model (incomplete ones marked)."""
    table = _table("grading (answers with a score / answers)", ["model", "graded"], 1)
    for g in grading:
        table.add_row(g.model, graded_cell(g.graded, g.answers))
    return table


def comparison_table(c: PairedComparison) -> Table:
    table = _table(
        f"{c.model_a} − {c.model_b} on shared cases", ["shared", "diff", "95% CI", "perm. p", "W/L/T"], 0
    )
    table.add_row(
        str(c.n_shared), num(c.diff), interval(c.ci_low, c.ci_high), pval(c.p_permutation),
        f"{c.wins_a}/{c.wins_b}/{c.ties}",
    )  # fmt: skip
    return table


def contamination_table(result: ContaminationResult) -> Group:
    """Two compact tables that fit full model ids in 100 columns: each model's full-set and
    post-cutoff means with the method's full − post, then the tests and verdict of the tested models."""
    s = result.summary
    share = "—" if s.share_significant is None else f"{s.share_significant:.0%}"
    title = (
        f"contamination: {s.n_significant}/{s.n_tested} tested models with a significant drop "
        f"(q < {s.alpha}, CI > 0: {share}), {s.n_signal} beyond drift"
    )
    columns = ["model", "cutoff", "status", "pre/post", "full", "post", "full−post"]
    means = _table(title, columns, 3, compact=True)
    tests = _table(
        "tested models: pre − post; adjusted = difference-in-differences vs the controls",
        ["model", "pre−post", "95% CI", "MWU p", "q", "δ", "adjusted", "verdict"],
        compact=True,
    )
    for r in result.rows:
        means.add_row(
            r.model, str(r.cutoff or "—"), f"{r.status}\nsimulated" if r.simulated else r.status,
            f"{r.n_pre}/{r.n_post}", num(r.mean_full),
            num(r.mean_post), num(r.full_minus_post),
        )  # fmt: skip
        if r.status == "tested":
            ci = f"[{num(r.pre_minus_post_low)}, {num(r.pre_minus_post_high)}]"
            tests.add_row(
                r.model, num(r.pre_minus_post), ci,
                pval(r.p_mannwhitney), pval(r.q_value), num(r.cliffs_delta, 2), num(r.adjusted),
                r.verdict or "—",
            )  # fmt: skip
    simulated = [r.model for r in result.rows if r.simulated]
    parts: list[Table | str] = [means, tests] if tests.row_count else [means]
    if simulated:
        parts.append(
            f"[bold yellow]simulations:[/] {', '.join(simulated)} have declared cutoffs from a simulation "
            "(see each cutoff's source), not real training cutoffs; their verdicts show what the analysis "
            "does, not a finding about any model"
        )
    return Group(*parts)


def trends_table(rows: Sequence[TrendRow]) -> Table:
    from livemed.analysis.trends import MIN_N_INTERVAL

    title = f"score by month of case publication (95% CI for months with at least {MIN_N_INTERVAL} cases)"
    table = _table(title, ["model", "month", "cases", "mean", "95% CI"], 2)
    for r in rows:
        table.add_row(r.model, r.month, str(r.n), num(r.mean), interval(r.ci_low, r.ci_high))
    return table


def funnel_table(rows: Sequence[FunnelRow]) -> Table:
    columns = ["source", "harvested", "pre-filter", "documents", "screener", "validator", "controller"]
    table = _table("curation funnel (whole store)", [*columns, "not yet", "cases", "rubrics", "scored"])
    for r in rows:
        before = sum(r.rejected_before().values())
        stages = [str(r.rejected.get(stage, 0)) for stage in ("screener", "validator", "controller")]
        counts = (r.harvested, before, r.documents)
        table.add_row(
            r.source, *map(str, counts), *stages, *map(str, (r.uncurated, r.cases, r.rubrics, r.scored))
        )
    return table


def reasons_table(rows: Sequence[ReasonRow]) -> Table:
    table = _table("rejections by reason", ["source", "stage", "reason", "count"], 3)
    for r in rows:
        table.add_row(r.source, r.stage, r.reason, str(r.count))
    return table


def taxonomy_table(rows: Sequence[DistributionRow]) -> Table:
    from livemed.analysis.taxonomy import CATEGORIES  # here: leaderboard and scores need none of it

    columns = ["model", "classifier", "n", *CATEGORIES, "knowledge", "reasoning", "no clinical error"]
    table = _table("error taxonomy", columns, 2)
    for r in rows:
        table.add_row(
            r.model, r.classifier, str(r.n), *(str(r.counts[c]) for c in CATEGORIES),
            f"{r.knowledge_share:.0%}", f"{r.reasoning_share:.0%}", str(r.no_clinical_error),
        )  # fmt: skip
    return table
