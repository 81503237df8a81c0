"""Rich tables for the analysis commands (the numbers come from `livemed.analysis`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from livemed.analysis.taxonomy import CATEGORIES

if TYPE_CHECKING:  # the analysis modules import scipy: keep `livemed --help` fast
    from livemed.analysis.contamination import ContaminationResult
    from livemed.analysis.leaderboard import LeaderboardRow, PairedComparison
    from livemed.analysis.taxonomy import DistributionRow
    from livemed.analysis.trends import TrendRow


def num(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "—"
    return f"{value:.{digits}f}"


def pval(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _table(title: str, columns: Sequence[str], left: int = 1) -> Table:
    table = Table(title=title)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right")
    return table


def leaderboard_table(rows: Sequence[LeaderboardRow]) -> Table:
    axes: list[str] = []
    for row in rows:
        axes.extend(a for a in row.per_axis if a not in axes)
    table = _table(
        "leaderboard", ["#", "model", "mean", "95% CI", "cases", "coverage", "harm", "failures", *axes], 2
    )
    for row in rows:
        table.add_row(
            str(row.rank), row.model, num(row.mean), f"{num(row.ci_low)}–{num(row.ci_high)}",
            str(row.n_cases), num(row.coverage), num(row.harm, 2), str(row.grade_failures),
            *(num(row.per_axis.get(a), 2) for a in axes),
        )  # fmt: skip
    return table


def comparison_table(c: PairedComparison) -> Table:
    table = _table(
        f"{c.model_a} − {c.model_b} on shared cases", ["shared", "diff", "95% CI", "perm. p", "W/L/T"], 0
    )
    table.add_row(
        str(c.n_shared), num(c.diff), f"{num(c.ci_low)}–{num(c.ci_high)}", pval(c.p_permutation),
        f"{c.wins_a}/{c.wins_b}/{c.ties}",
    )  # fmt: skip
    return table


def contamination_table(result: ContaminationResult) -> Table:
    s = result.summary
    share = "—" if s.share_significant is None else f"{s.share_significant:.0%}"
    title = (
        f"contamination: {s.n_significant}/{s.n_tested} tested models with a significant drop "
        f"(BH q < {s.alpha}; {share}); {s.n_signal} beyond drift"
    )
    columns = ["model", "cutoff", "status", "pre/post", "full", "post", "pre−post [95% CI]", "MWU p",
               "q", "δ", "adjusted", "verdict"]  # fmt: skip
    table = _table(title, columns, 3)
    for r in result.rows:
        table.add_row(
            r.model, str(r.cutoff or "—"), r.status, f"{r.n_pre}/{r.n_post}", num(r.mean_full),
            num(r.mean_post),
            f"{num(r.pre_minus_post)} [{num(r.pre_minus_post_low)}, {num(r.pre_minus_post_high)}]",
            pval(r.p_mannwhitney), pval(r.q_value), num(r.cliffs_delta, 2), num(r.adjusted), r.verdict or "—",
        )  # fmt: skip
    return table


def trends_table(rows: Sequence[TrendRow]) -> Table:
    table = _table("score by month of case publication", ["model", "month", "cases", "mean", "95% CI"], 2)
    for r in rows:
        table.add_row(r.model, r.month, str(r.n), num(r.mean), f"{num(r.ci_low)}–{num(r.ci_high)}")
    return table


def taxonomy_table(rows: Sequence[DistributionRow]) -> Table:
    table = _table("error taxonomy", ["model", "classifier", "n", *CATEGORIES, "knowledge", "reasoning"], 2)
    for r in rows:
        table.add_row(
            r.model, r.classifier, str(r.n), *(str(r.counts[c]) for c in CATEGORIES),
            f"{r.knowledge_share:.0%}", f"{r.reasoning_share:.0%}",
        )  # fmt: skip
    return table
