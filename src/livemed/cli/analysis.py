"""`livemed leaderboard`, `trends`, `funnel`, `taxonomy` and `report` (`contamination`: cli/contamination.py).

Each writes its tables as CSV and JSON (into `[analysis] out_dir`, default ./results) and shows them
as rich tables; `report` writes one self-contained HTML file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from livemed.cli.analysis_views import (
    comparison_table,
    contamination_table,
    funnel_table,
    grading_table,
    leaderboard_table,
    reasons_table,
    taxonomy_table,
    trends_table,
)
from livemed.cli.context import DOMAIN, AppState, console, err_console, rubric_choice, state
from livemed.cli.root import app
from livemed.cli.window_options import (
    AFTER_CUTOFF,
    MAX_DATE,
    MIN_DATE,
    cutoff_registry,
    report_window,
    windowed_scores,
)

if TYPE_CHECKING:
    from livemed.analysis.collect import ScoreSet
    from livemed.analysis.completeness import Grading
    from livemed.analysis.contamination import AnalysisSettings
    from livemed.store import Store

JUDGE = typer.Option(
    None,
    "--judge",
    metavar="MODEL",
    help="Judge whose scores to analyse, e.g. offline/lexical (needed when there are several).",
)
CONVENTION = typer.Option(
    "livemed", "--convention", metavar="livemed|healthbench", help="Scoring convention."
)
POLICY = typer.Option(
    "strict",
    "--policy",
    metavar="strict|not-met|exclude",
    help="Analyse scores made with this failure policy (see `livemed scores --help`).",
)
OUT = typer.Option(
    None,
    "--out",
    metavar="DIR",
    help="Folder for the CSV/JSON tables, e.g. results (default: \\[analysis] out_dir).",
)
SEED = typer.Option(
    None,
    "--seed",
    min=0,
    metavar="N",
    help="Random seed of the bootstrap and permutation tests, e.g. 7 (default: \\[analysis] seed).",
)
RESAMPLES = typer.Option(
    None, "--resamples", min=1000, metavar="N", help="Bootstrap resamples, e.g. 5000 (default 2000)."
)
CUTOFFS = typer.Option(
    None,
    "--cutoffs",
    help="Your cutoff registry (TOML, or CSV model,cutoff), on top of the bundled one; it replaces the file "
    "named by \\[analysis] cutoffs for this command (it does not add to it).",
)
ALLOW_INCOMPLETE = typer.Option(
    False,
    "--allow-incomplete/--no-allow-incomplete",
    help="Also rank models whose answers are not all graded (marked as such).",
)


def _settings(
    app_state: AppState, seed: int | None, resamples: int | None, convention: str = "livemed"
) -> AnalysisSettings:
    from livemed.analysis.contamination import AnalysisSettings

    a = app_state.config.analysis
    return AnalysisSettings(
        min_post=a.min_post_cases,
        min_pre=a.min_pre_cases,
        alpha=a.alpha,
        resamples=resamples or a.resamples,
        permutations=a.permutations,
        seed=a.seed if seed is None else seed,
        convention=convention,
    )


def out_dir(app_state: AppState, out: Path | None) -> Path:
    config = app_state.config
    return out or config.analysis.path(config.analysis.out_dir, config.path)


def _scores(
    app_state: AppState, judge: str | None, convention: str, policy: str, *, show: bool = True
) -> ScoreSet:
    """The scores (said on screen with their grading table, unless `show` is False: the caller narrows
    them to a window first and calls `_show_scores` on what it keeps)."""
    from livemed.analysis.collect import load_scores

    scored = load_scores(app_state.existing_store, judge=judge, convention=convention, policy=policy)
    if show:
        _show_scores(scored, convention, policy)
    return scored


def _show_scores(scored: ScoreSet, convention: str, policy: str) -> None:
    console.print(
        f"[dim]{len(scored.rows)} (model, case) scores · judge {scored.judge} · {convention} scoring · "
        f"unusable verdicts: {policy}[/]"
    )
    console.print(grading_table(list(scored.grading.values())))


def _grading_tables(
    folder: Path, scored: ScoreSet, context: dict[str, str | None] | None = None
) -> list[Path]:
    from livemed.analysis.table_files import write_table

    return write_table(folder, "grading", list(scored.grading.values()), context=context or scored.context())


def _fail_if_left_out(store: Store, scored: ScoreSet, left_out: list[Grading]) -> None:
    """Exit 1, after the output, when incompletely graded models were left out of a ranking."""
    from livemed.analysis.completeness import not_ranked_line
    from livemed.errors import RunError

    if left_out:
        raise RunError(not_ranked_line(left_out, scored.judge, unusable=_unusable(store, scored.judge)))


def _unusable(store: Store, judge: str | None) -> bool:
    """Whether `judge` left unusable verdicts (the not-ranked hint then names --retry-failures)."""
    from livemed.score.stage import has_unusable

    return judge is not None and has_unusable(store, judge)


def wrote(paths: list[Path]) -> None:
    console.print("[dim]wrote " + ", ".join(str(p) for p in paths) + "[/]")


@app.command("leaderboard")
def leaderboard_command(
    ctx: typer.Context,
    judge: str | None = JUDGE,
    convention: str = CONVENTION,
    policy: str = POLICY,
    compare: list[str] = typer.Option(
        None,
        "--compare",
        metavar="MODEL",
        help="Two models to compare on shared cases, e.g. --compare offline/reference "
        "--compare offline/empty.",
    ),
    out: Path | None = OUT,
    seed: int | None = SEED,
    resamples: int | None = RESAMPLES,
    allow_incomplete: bool = ALLOW_INCOMPLETE,
    min_date: str | None = MIN_DATE,
    max_date: str | None = MAX_DATE,
    after_cutoff: bool = AFTER_CUTOFF,
    release: str | None = typer.Option(
        None, "--release", metavar="NAME", help="Only the cases of this release, e.g. 2025-q3."
    ),
    by_cutoff: bool = typer.Option(
        False, "--by-cutoff", help="Also show all cases and post-cutoff only side by side (cutoff registry)."
    ),
    cutoffs: Path | None = CUTOFFS,
) -> None:
    """Mean score per model with a 95% bootstrap interval, per axis, coverage, harm and failures.

    Models whose answers are not all graded are left out of the ranking (exit 1) unless
    --allow-incomplete."""
    from livemed.analysis.leaderboard import compare as compare_models
    from livemed.analysis.leaderboard import ranked_leaderboard
    from livemed.analysis.table_files import write_table
    from livemed.errors import UnknownNameError, UserError

    app_state = state(ctx)
    s = _settings(app_state, seed, resamples, convention)
    scored = _scores(app_state, judge, convention, policy, show=False)
    window = (min_date, max_date, after_cutoff, release, cutoffs)
    scored, by_cutoff_rows, described = windowed_scores(
        app_state, scored, window, by_cutoff, s, allow_incomplete
    )
    _show_scores(scored, convention, policy)  # the window's counts, as grading.csv has them
    context = {**scored.context(), **({"window": described} if described else {})}
    rows, _, left_out = ranked_leaderboard(
        scored, resamples=s.resamples, seed=s.seed, allow_incomplete=allow_incomplete
    )
    console.print(leaderboard_table(rows))
    if scored.judge:
        from livemed.judges.cards import card_for

        view = card_for(app_state.existing_store, scored.judge, (score.answer_id for score in scored.scores))
        console.print(view.line, markup=False)
        context |= {"validity": view.verdict, "validity_card": view.card_id}
        rows = [r.model_copy(update={"validity": view.verdict, "validity_card": view.card_id}) for r in rows]
    paths = write_table(out_dir(app_state, out), "leaderboard", rows, context=context)
    paths += _grading_tables(out_dir(app_state, out), scored, context)
    if by_cutoff_rows:
        from livemed.analysis.window import by_cutoff_summary
        from livemed.cli.window_options import by_cutoff_table

        console.print(by_cutoff_table(by_cutoff_rows))
        summary = by_cutoff_summary(by_cutoff_rows)
        paths += write_table(
            out_dir(app_state, out), "leaderboard-by-cutoff", by_cutoff_rows, summary, context=context
        )
    if compare:
        if len(compare) != 2:
            raise UserError("--compare takes exactly two models: --compare A --compare B")
        known = [r.model for r in rows]
        for model in compare:
            if model not in known:
                raise UnknownNameError("model (with scores)", model, known)
        result = compare_models(
            scored.rows,
            compare[0],
            compare[1],
            resamples=s.resamples,
            permutations=s.permutations,
            seed=s.seed,
            convention=convention,
        )
        console.print(comparison_table(result))
        if (warning := result.case_set_warning()) is not None:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
        paths += write_table(out_dir(app_state, out), "comparison", [result], context=scored.context())
    wrote(paths)
    _fail_if_left_out(app_state.existing_store, scored, left_out)


@app.command("trends")
def trends_command(
    ctx: typer.Context,
    judge: str | None = JUDGE,
    convention: str = CONVENTION,
    policy: str = POLICY,
    out: Path | None = OUT,
    seed: int | None = SEED,
) -> None:
    """Mean score per model by month of case publication, with counts."""
    from livemed.analysis.table_files import write_table
    from livemed.analysis.trends import monthly

    app_state = state(ctx)
    s = _settings(app_state, seed, None, convention)
    scored = _scores(app_state, judge, convention, policy)
    rows = monthly(scored.rows, seed=s.seed, convention=convention)
    console.print(trends_table(rows))
    folder = out_dir(app_state, out)
    wrote(write_table(folder, "trends", rows, context=scored.context()) + _grading_tables(folder, scored))


@app.command("funnel")
def funnel_command(ctx: typer.Context, out: Path | None = OUT) -> None:
    """The curation funnel of the whole store per source, and every rejection by stage and reason."""
    from livemed.analysis.funnel import store_funnel
    from livemed.analysis.table_files import write_table

    app_state = state(ctx)
    rows, reasons = store_funnel(app_state.existing_store)
    if not rows:
        from livemed.errors import UserError

        raise UserError(
            "the store holds no documents, cases or rejections yet: run `livemed harvest --source demo` "
            "(any source of `livemed sources`) first"
        )
    console.print(funnel_table(rows))
    console.print(reasons_table(reasons))
    folder = out_dir(app_state, out)
    wrote(write_table(folder, "funnel", rows) + write_table(folder, "funnel-reasons", reasons))


@app.command("report")
def report_command(
    ctx: typer.Context,
    out: Path | None = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="HTML file to write, e.g. report.html, or an existing folder for DIR/report.html "
        "(default: \\[analysis] report).",
    ),
    judge: str | None = JUDGE,
    convention: str = CONVENTION,
    policy: str = POLICY,
    cutoffs: Path | None = CUTOFFS,
    max_cases: int = typer.Option(
        100, "--max-cases", min=0, metavar="N", help="Cases in the case browser (most recent)."
    ),
    title: str = typer.Option("livemed report", "--title", metavar="TEXT", help="Title of the report."),
    seed: int | None = SEED,
    resamples: int | None = RESAMPLES,
    allow_incomplete: bool = ALLOW_INCOMPLETE,
    min_date: str | None = MIN_DATE,
    max_date: str | None = MAX_DATE,
    after_cutoff: bool = AFTER_CUTOFF,
    rubric_version: str = typer.Option(
        "writer",
        "--rubric-version",
        metavar="writer|latest-approved",
        help="Report the scores on the writer's rubrics (default), or those `scores --rubric-version "
        "latest-approved` made on each case's newest reviewed rubric.",
    ),
) -> None:
    """Write ONE self-contained HTML report (opens offline) and every table as CSV/JSON beside it."""
    from livemed.common.atomic import staged_folder
    from livemed.reports.build import build_report
    from livemed.reports.html import write_report

    app_state = state(ctx)
    config = app_state.config
    path = out or config.analysis.path(config.analysis.report, config.path)
    if path.is_dir():  # an existing folder: write DIR/report.html (and DIR/report-tables/)
        path = path / "report.html"
    data = build_report(
        app_state.existing_store,
        cutoff_registry(app_state, cutoffs),
        settings=_settings(app_state, seed, resamples, convention),
        judge=judge,
        convention=convention,
        policy=policy,
        max_cases=max_cases,
        title=title,
        allow_incomplete=allow_incomplete,
        window=report_window(app_state, min_date, max_date, after_cutoff, cutoffs),
        rubric_version=rubric_choice(rubric_version),
    )
    console.print(leaderboard_table(data.leaderboard))
    if data.validity:
        console.print(data.validity, markup=False)
    console.print(contamination_table(data.contamination))
    tables = path.parent / f"{path.stem}-tables"
    with staged_folder(tables) as work:  # the page and its tables, or neither (renames alone come last)
        written = _write_report_tables(data, work)
        write_report(data, path)
    console.print(f"[dim]wrote {written} table files to {tables}[/]")
    console.print(f"wrote [bold]{path}[/] — open it in a browser (no network needed)")
    if data.not_ranked:
        from livemed.analysis.completeness import not_ranked_line
        from livemed.errors import RunError

        unusable = _unusable(app_state.existing_store, data.judge)
        raise RunError(not_ranked_line(data.not_ranked, data.judge, unusable=unusable))


def _write_report_tables(data: object, folder: Path) -> int:
    from livemed.analysis.table_files import write_table
    from livemed.reports.build import ReportData

    assert isinstance(data, ReportData)
    c = {"convention": data.convention, "judge": data.judge, "failure_policy": data.policy}
    if data.rubric_version != "writer":
        c["rubric_version"] = data.rubric_version
    if data.window:
        c["window"] = data.window
    paths = write_table(folder, "leaderboard", data.leaderboard, context=c)
    paths += write_table(folder, "comparisons", data.comparisons, context=c)
    paths += write_table(
        folder, "contamination", data.contamination.rows, data.contamination.summary, context=c
    )
    paths += write_table(folder, "trends", data.trends, context=c)
    paths += write_table(folder, "taxonomy", data.taxonomy, context=c)
    paths += write_table(folder, "funnel", data.funnel, context=c)
    paths += write_table(folder, "rejection_reasons", data.reasons, context=c)
    paths += write_table(folder, "runs", data.runs, context=c)
    paths += write_table(folder, "usage", data.usage, context=c)
    paths += write_table(folder, "prompts", data.prompts, context=c)
    paths += write_table(folder, "grading", data.grading, context=c)
    return len(paths)


@app.command("taxonomy")
def taxonomy_command(
    ctx: typer.Context,
    model: list[str] | None = typer.Option(
        None,
        "--model",
        "-m",
        metavar="MODEL",
        help="A model whose failures to classify, e.g. offline/empty; repeat for several "
        "(default: every scored model).",
    ),
    k: int = typer.Option(
        20,
        "--k",
        min=1,
        metavar="N",
        help="How many lowest-scoring cases per model (cases scored 1.0 are left out).",
    ),
    classifier: str = typer.Option(
        "offline/heuristic",
        "--classifier",
        metavar="MODEL",
        help="Classifier model id, e.g. openai/gpt-4o, or offline/heuristic (no LLM).",
    ),
    judge: str | None = JUDGE,
    convention: str = CONVENTION,
    policy: str = POLICY,
    out: Path | None = OUT,
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    cache_read_only: bool = typer.Option(
        False, "--cache-read-only", help="Only use cached responses; never call a model."
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0,
        metavar="USD",
        help="Stop calling models past this many US dollars, e.g. 2.",
    ),
    domain: str | None = DOMAIN,
) -> None:
    """Classify the root cause (CNIF, GOPR, MHME, KGOC) of each model's k lowest-scoring answers (the
    clinical taxonomy: a pack without one, such as legal, is refused)."""
    from livemed.cli.taxonomy_run import check_clinical, run_taxonomy
    from livemed.common.atomic import check_writable

    app_state = state(ctx)
    check_clinical(app_state, domain)
    check_writable(out_dir(app_state, out) / "taxonomy.csv")  # now, before any classifier call is paid for
    rows = run_taxonomy(
        app_state,
        models=model or [],
        k=k,
        classifier=classifier,
        judge=judge,
        convention=convention,
        policy=policy,
        no_cache=no_cache,
        cache_read_only=cache_read_only,
        max_cost=max_cost,
    )
    console.print(taxonomy_table(rows))
    from livemed.analysis.table_files import write_table

    context = {"convention": convention, "judge": judge, "failure_policy": policy, "classifier": classifier}
    wrote(write_table(out_dir(app_state, out), "taxonomy", rows, context=context))
