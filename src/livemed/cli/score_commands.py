"""`livemed scores`: numbers from the store (`judges agreement`, from label files, is in
agreement_command.py, so that `scores` imports no model or grading-command module)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import RUBRIC_VERSION, AppState, console, err_console, rubric_choice, state
from livemed.cli.root import app
from livemed.cli.window_options import AFTER_CUTOFF, MAX_DATE, MIN_DATE
from livemed.common.atomic import write_text
from livemed.errors import ConfigError

if TYPE_CHECKING:
    from livemed.analysis.bimodality import BimodalityRow
    from livemed.analysis.completeness import Grading
    from livemed.analysis.length import LengthRow
    from livemed.score.corrected import CorrectedScore, CorrectedScores
    from livemed.score.rows import ScoreRow
    from livemed.score.stage import ScoreRun
    from livemed.store import Store


@app.command()
def scores(
    ctx: typer.Context,
    judge: str = typer.Option(
        ..., "--judge", metavar="MODEL", help="Whose grades to score, e.g. offline/lexical."
    ),
    convention: str = typer.Option(
        "livemed", "--convention", metavar="livemed|healthbench", help="Clipped per case, or HealthBench's."
    ),
    policy: str = typer.Option(
        "strict",
        "--policy",
        metavar="strict|not-met|exclude",
        help="Unusable verdicts: strict (default: the answer is not graded), not-met (counted as not met) "
        "or exclude (the criterion left out); not-met and exclude apply only to a model whose unusable "
        "verdicts are at most --max-failure-share of its verdicts.",
    ),
    max_failure_share: float = typer.Option(
        0.05,
        "--max-failure-share",
        min=0.0,
        max=1.0,
        metavar="SHARE",
        help="Largest share of a model's verdicts that may be unusable for --policy not-met or exclude "
        "to score them, e.g. 0.02 (default 0.05).",
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", metavar="MODEL", help="Only this candidate, e.g. offline/empty."
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        min=0,
        metavar="N",
        help="Bootstrap seed, e.g. 7 (default: \\[analysis] seed); \\[analysis] resamples, as leaderboard.",
    ),
    by: str | None = typer.Option(
        None,
        "--by",
        metavar="axis|theme|tag",
        help="Also break scores down by axis, theme, or tag (HealthBench's tag metrics).",
    ),
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write the leaderboard as JSON, e.g. scores.json."
    ),
    allow_incomplete: bool = typer.Option(
        False,
        "--allow-incomplete/--no-allow-incomplete",
        help="Also rank models whose answers are not all graded (marked).",
    ),
    corrected: bool = typer.Option(
        False,
        "--corrected",
        help="Also each model's mean score corrected for grader error by the reviewers' labels on the "
        "grader's audit sample (review sample), with its 95% interval, beside the raw one.",
    ),
    min_date: str | None = MIN_DATE,
    max_date: str | None = MAX_DATE,
    after_cutoff: bool = AFTER_CUTOFF,
    rubric_version: str = RUBRIC_VERSION,
) -> None:
    """Score fully graded answers (Score records) and print a leaderboard with bootstrap 95% CIs.

    An answer with a failed grader call, or an unusable verdict its --policy does not count, is not yet
    graded: it gets no score, and a model with such answers is left out of the ranking (exit 1) unless
    --allow-incomplete."""
    from livemed.analysis.completeness import count, not_ranked_line
    from livemed.analysis.leaderboard import BREAKDOWNS
    from livemed.analysis.leaderboard import breakdown as breakdown_rows
    from livemed.errors import RunError
    from livemed.pipeline.runs import track_run
    from livemed.score import formula as S
    from livemed.score.stage import score_all

    if convention not in S.CONVENTIONS:
        raise ConfigError(f"--convention must be livemed or healthbench, got {convention!r}")
    if policy not in S.POLICIES:
        raise ConfigError(f"--policy must be one of {', '.join(S.POLICIES)}, got {policy!r}")
    if by is not None and by not in BREAKDOWNS:
        raise ConfigError(f"--by must be one of {', '.join(BREAKDOWNS)}, got {by!r}")
    if by == "tag" and convention != "healthbench":
        raise ConfigError("--by tag gives HealthBench's tag metrics: add --convention healthbench")
    rubrics = rubric_choice(rubric_version)
    analysis = state(ctx).config.analysis  # the leaderboard's bootstrap: one number, one interval
    seed = analysis.seed if seed is None else seed
    settings = {
        "judge": judge,
        "convention": convention,
        "failure_policy": policy,
        "max_failure_share": max_failure_share,
        "model": model,
        "seed": seed,
    } | rubric_settings(rubrics)
    store = state(ctx).existing_store
    _require_sample(store, judge, corrected, rubrics)  # before scoring: without one nothing to correct
    with track_run(store, "scores", settings=settings) as record:
        run = score_all(
            store,
            judge,
            convention=convention,
            policy=policy,
            model=model,
            max_failure_share=max_failure_share,
            rubric_version=rubrics,
        )
        record.counts = {"score": len(run.scores), **{f"excluded: {k}": v for k, v in run.excluded.items()}}
    run = windowed(state(ctx), run, min_date, max_date, after_cutoff)
    rows, ranked, left_out = ranked_rows(
        run, convention, seed=seed, resamples=analysis.resamples, allow_incomplete=allow_incomplete
    )
    grading = count(run.answers, run.scores)
    boot = {"seed": seed, "resamples": analysis.resamples}
    breakdown = breakdown_rows(ranked, by, convention, **boot) if by else []  # type: ignore[arg-type]
    print_scores(
        rows, f"scores by {judge} · convention: {convention} · unusable verdicts: {policy}{rubric_title(run)}"
    )
    for line in failure_share_lines(run, policy):
        console.print(line, markup=False)
    from livemed.judges.cards import card_line

    console.print(card_line(store, judge, (score.answer_id for score in run.scores)), markup=False)
    if by:
        _print_breakdown(by, breakdown, convention)
    for reason, n in sorted(run.excluded.items()):
        console.print(f"answers left out ({reason}): {n}")
    print_reviewed(run, judge)
    distribution = warn_bimodal(run.scores)
    lengths = _print_length(store, run.scores)
    fixed = print_corrected(store, judge, run.scores, wanted=corrected, by_axis=by == "axis")
    if json_out is not None:
        payload = {
            "judge": judge,
            "convention": convention,
            "policy": policy,
            "rubric_version": rubrics,
            "models": rows,
            "by": {by: breakdown} if by else {},
            "excluded": dict(run.excluded),
            "max_failure_share": max_failure_share,
            "unusable_verdicts": {
                m: share._asdict() | {"share": share.share} for m, share in run.shares.items()
            },
            "grading": [g.model_dump() for g in grading.values()],
            "not_ranked": [g.model for g in left_out],
            "score_distribution": [asdict(row) for row in distribution],
            "length": [row.model_dump() for row in lengths],
            "corrected": asdict(fixed) if fixed is not None else None,
        }
        write_text(json_out, json.dumps(payload, indent=2))
        console.print(f"wrote {json_out}")
    if left_out:
        raise RunError(not_ranked_line(left_out, judge, unusable=bool(run.shares)))


def _require_sample(store: Store, judge: str, wanted: bool, rubrics: str) -> None:
    if not wanted:
        return
    if rubrics != "writer":  # the audit sample's verdicts are on the writer's criteria
        raise ConfigError("--corrected corrects scores on the writer's rubrics: leave out --rubric-version")
    from livemed.score.corrected import require_sample

    require_sample(store, judge)


def print_corrected(
    store: Store, judge: str, scores: Sequence[ScoreRow], *, wanted: bool, by_axis: bool = False
) -> CorrectedScores | None:
    """Raw and corrected mean scores side by side (`score.corrected`), per axis too with `by_axis`, and
    a line per model whose labels are too few for a useful interval; None unless `wanted` (--corrected)."""
    if not wanted:
        return None
    from livemed.score.corrected import corrected_scores

    result = corrected_scores(store, judge, answer_ids={score.answer_id for score in scores})
    title = f"corrected by reviewers' labels ({result.labelled} of {result.sampled} sampled verdicts labelled"
    console.print(_corrected_table(f"{title}; unclipped means)", result.scores, axis=False))
    for row in result.scores:
        if row.too_few:
            console.print(f"too few labels for a useful interval, {row.model}: {row.too_few}", markup=False)
    for model, n in sorted(result.clipped.items()):
        console.print(
            f"{model}: {n} answer(s) with a negative raw score (the livemed convention clips them to 0)",
            markup=False,
        )
    if by_axis:
        console.print(
            _corrected_table("corrected by axis (too few labels: marked *)", result.by_axis, axis=True)
        )
    return result


def _corrected_table(title: str, rows: list[CorrectedScore], *, axis: bool) -> Table:
    from livemed.cli.analysis_views import interval

    table = Table(title=title)
    names = ("model", *(("axis",) if axis else ()), "raw", "corrected", "95% CI", "labels-only", "its 95% CI")
    for column in (*names, "labels"):
        table.add_column(column, justify="left" if column in ("model", "axis") else "right", no_wrap=True)
    for row in rows:
        labels = f"{row.labels}{'*' if axis and row.too_few else ''}"
        table.add_row(
            escape(row.model), *((escape(row.axis),) if axis else ()), f"{row.raw:.3f}",
            _number(row.corrected), interval(row.ci_low, row.ci_high), _number(row.classical),
            interval(row.classical_low, row.classical_high), labels,
        )  # fmt: skip
    return table


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def rubric_settings(rubrics: str) -> dict[str, str]:
    """The run's setting naming reviewed rubrics (none for the writer's: those runs stay as they were)."""
    return {} if rubrics == "writer" else {"rubric_version": rubrics}


def rubric_title(run: ScoreRun) -> str:
    """The table title's part naming the rubrics scored: none for the writer's (the default)."""
    if run.rubric_version == "writer":
        return ""
    reviewed, cases = len(run.reviewed_cases), len(run.cases)
    return f" · rubrics: latest-approved (a reviewed version for {reviewed} of {cases} cases)"


def print_reviewed(run: ScoreRun, judge: str) -> None:
    """On reviewed rubrics: which scores these are, and how to grade criteria reviewers wrote."""
    from livemed.score.stage import NOT_YET_GRADED

    if run.rubric_version == "writer":
        return
    lines = [
        f"rubrics: each case's newest reviewed version ({len(run.reviewed_cases)} of {len(run.cases)} cases "
        "reviewed; the writer's elsewhere); these scores are stored beside the writer-rubric ones"
    ]
    if run.excluded.get(NOT_YET_GRADED):
        lines.append(
            "a criterion a reviewer wrote is graded by "
            f"`livemed grade --judge {judge} --rubric-version latest-approved`"
        )
    for line in lines:
        console.print(line, markup=False)


def failure_share_lines(run: ScoreRun, policy: str) -> list[str]:
    """One line per model with unusable verdicts: their share, and whether the policy scored them."""
    lines = []
    for name, share in sorted(run.shares.items()):
        counted = policy != "strict" and share.share <= run.max_failure_share
        how = (
            f"counted as {policy}"
            if counted
            else "its answers with one are not graded"
            + ("" if policy == "strict" else f" (above --max-failure-share {run.max_failure_share:g})")
        )
        lines.append(
            f"unusable verdicts, {name}: {share.failed} of {share.verdicts} ({share.share:.1%}); {how}"
        )
    return lines


def windowed(
    app_state: AppState, run: ScoreRun, min_date: str | None, max_date: str | None, after_cutoff: bool
) -> ScoreRun:
    """The scoring run narrowed to --min-date/--max-date/--after-cutoff (every score stays stored)."""
    if (min_date, max_date, after_cutoff) == (None, None, False):  # no window: the run as it is
        return run
    from livemed.analysis.window import window_run
    from livemed.cli.window_options import build_window, print_window

    models = set(run.answers) | {s.model for s in run.scores}
    window = build_window(app_state, min_date, max_date, after_cutoff, models)
    print_window(window, models)
    return window_run(app_state.existing_store, run, window)


def warn_bimodal(scores: Sequence[ScoreRow]) -> list[BimodalityRow]:
    """The score-distribution check per model; a warning line for each model whose scores pile up at
    0 and 1 (`analysis.bimodality`)."""
    from livemed.analysis.bimodality import score_distribution, warnings

    rows = score_distribution(scores)
    for line in warnings(rows):
        err_console.print(f"[yellow]warning:[/] {escape(line)}")
    return rows


def _print_length(store: Store, scores: Sequence[ScoreRow]) -> list[LengthRow]:
    """One line per model: answer length (words) against score (Spearman), `analysis.length`."""
    from livemed.analysis.length import length_rows, stored_lengths

    rows = length_rows(stored_lengths(store, (s.answer_id for s in scores)), scores)
    for row in rows:
        rho = "—" if row.rho is None else f"{row.rho:+.2f}"
        p = "" if row.p_value is None else f", p {row.p_value:.3g}"
        console.print(
            f"answer length vs score, {row.model}: Spearman rho {rho}{p} "
            f"(n {row.n}, median {row.median_words:g} words)",
            markup=False,
        )
    return rows


def ranked_rows(
    run: ScoreRun, convention: str, *, seed: int, allow_incomplete: bool, resamples: int | None = None
) -> tuple[list[dict[str, Any]], list[ScoreRow], list[Grading]]:
    """Leaderboard rows of a scoring run (with answers graded per model), the scores ranked, and the
    models left out of the ranking because some of their answers are not graded."""
    from livemed.analysis.completeness import count, incomplete
    from livemed.analysis.leaderboard import scores_table
    from livemed.common.stats import DEFAULT_RESAMPLES

    grading = count(run.answers, run.scores)
    left_out = [] if allow_incomplete else incomplete(grading)
    ranked = [sc for sc in run.scores if sc.model not in {g.model for g in left_out}]
    rows = scores_table(ranked, convention, seed=seed, resamples=resamples or DEFAULT_RESAMPLES)
    for row in rows:
        g = grading[row["model"]]
        share = run.shares.get(row["model"])
        row.update(answers_graded=g.graded, answers_total=g.answers, complete=g.complete)
        row["unusable_share"] = share.share if share is not None else 0.0
    return rows, ranked, left_out


SCORES_KEPT = ("model", "score", "95% CI", "n", "graded", "unusable")


def print_scores(rows: list[dict[str, Any]], title: str) -> None:
    """The scores table in the terminal's width (`cli.fitted`): coverage, then harm, give way first."""
    from rich.text import Text

    from livemed.cli.analysis_views import graded_cell, interval
    from livemed.cli.fitted import Cell, Column, fitted

    names = ("model", "score", "95% CI", "n", "graded", "unusable", "harm", "coverage")
    columns = [Column(n, keep=n in SCORES_KEPT, wrap=n == "model") for n in names]
    cells: list[list[Cell]] = [
        [
            Text(row["model"]), f"{row['score']:.3f}", interval(row["ci_low"], row["ci_high"]), str(row["n"]),
            graded_cell(row["answers_graded"], row["answers_total"]), f"{row.get('unusable_share', 0.0):.1%}",
            f"{row['harm']:.3f}", f"{row['coverage']:.3f}",
        ]
        for row in rows
    ]  # fmt: skip
    console.print(fitted(console, title, columns, cells, elsewhere="scores --json FILE"))


def _print_breakdown(by: str, rows: list[dict[str, Any]], convention: str) -> None:
    how = {
        "axis": "the case formula over each axis's criteria",
        "theme": "each case's score under its themes"
        if convention == "healthbench"
        else "the case formula over each theme's criteria",
        "tag": "example tags: the case score; rubric tags: the case formula over their criteria",
    }[by]
    from livemed.cli.analysis_views import interval

    table = Table(title=f"by {by} ({how})")
    for column in ("model", by, "score", "95% CI", "n"):
        table.add_column(column, justify="right" if column in ("score", "n") else "left", no_wrap=True)
    for row in rows:
        ci = interval(row["ci_low"], row["ci_high"])
        table.add_row(row["model"], row[by], f"{row['score']:.3f}", ci, str(row["n"]))
    console.print(table)
