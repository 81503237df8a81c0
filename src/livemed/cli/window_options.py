"""`--min-date`, `--max-date`, `--after-cutoff` (and the leaderboard's `--release`): the cases that
`scores`, `leaderboard`, `eval` and `report` count (`livemed.analysis.window`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import AppState, console, err_console
from livemed.errors import ConfigError

if TYPE_CHECKING:
    from livemed.analysis.collect import ScoreSet
    from livemed.analysis.contamination import AnalysisSettings
    from livemed.analysis.cutoffs import CutoffEntry
    from livemed.analysis.window import CutoffComparison, Window

MIN_DATE = typer.Option(
    None,
    "--min-date",
    metavar="YYYY-MM-DD",
    help="Only cases published on or after this day, e.g. 2025-01-01.",
)
MAX_DATE = typer.Option(
    None,
    "--max-date",
    metavar="YYYY-MM-DD",
    help="Only cases published on or before this day, e.g. 2025-12-31.",
)
AFTER_CUTOFF = typer.Option(
    False,
    "--after-cutoff",
    help="Each model only on cases published after its own training cutoff (the cutoff registry).",
)


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{option} must be a date like 2025-06-30, got {value!r}") from None


def build_window(
    app_state: AppState,
    min_date: str | None,
    max_date: str | None,
    after_cutoff: bool,
    models: Iterable[str],
    *,
    cutoffs: Path | None = None,
    release: str | None = None,
) -> Window:
    """The window of these options; with --after-cutoff each model's cutoff from the registry
    (`[analysis] cutoffs` or --cutoffs on top of the bundled one)."""
    from livemed.analysis.window import Window

    window = Window(min_date=_day(min_date, "--min-date"), max_date=_day(max_date, "--max-date"))
    if window.min_date and window.max_date and window.min_date > window.max_date:
        raise ConfigError(f"--min-date {window.min_date} is after --max-date {window.max_date}")
    if release is not None:
        from dataclasses import replace

        from livemed.releases.manifest import get_release

        chosen = get_release(app_state.existing_store, release)
        window = replace(window, case_ids=frozenset(chosen.manifest), release=release)
    if after_cutoff:
        window = window.with_cutoffs(models, cutoff_registry(app_state, cutoffs))
    return window


def cutoffs_path(app_state: AppState, cutoffs: Path | None) -> Path | None:
    """--cutoffs, else `[analysis] cutoffs`, else None (the bundled registry alone)."""
    a = app_state.config.analysis
    return cutoffs or (a.path(a.cutoffs, app_state.config.path) if a.cutoffs else None)


def cutoff_registry(app_state: AppState, cutoffs: Path | None) -> dict[str, CutoffEntry]:
    """The bundled cutoff registry with the user's file (`cutoffs_path`) on top."""
    from livemed.analysis.cutoffs import load_cutoffs

    return dict(load_cutoffs(cutoffs_path(app_state, cutoffs)))


def print_window(window: Window, models: Iterable[str], line: str | None = None) -> None:
    """Say which cases count (`line`, else the window's description), and which models --after-cutoff
    cannot evaluate."""
    if not window.active:
        return
    console.print(f"[dim]{escape(line or window.describe())}[/]")
    missing = window.no_cutoff(models)
    if missing:
        err_console.print(
            f"[yellow]no training cutoff in the registry for {escape(', '.join(missing))}[/]: no post-cutoff "
            "cases for them (add them to the file named by \\[analysis] cutoffs, or pass --cutoffs)",
            highlight=False,
        )


def windowed_scores(
    app_state: AppState,
    scored: ScoreSet,
    options: tuple[str | None, str | None, bool, str | None, Path | None],
    side_by_side: bool,
    settings: AnalysisSettings,
    allow_incomplete: bool,
) -> tuple[ScoreSet, list[CutoffComparison], str | None]:
    """The leaderboard's scores narrowed to its window, and the window's description (None: every case);
    with `side_by_side`, each model on the window's cases and on its post-cutoff ones
    (`analysis.window.by_cutoff`)."""
    from dataclasses import replace

    from livemed.analysis.leaderboard import ranked_leaderboard
    from livemed.analysis.window import by_cutoff, window_scoreset

    min_date, max_date, after_cutoff, release, cutoffs = options
    models = sorted({s.model for s in scored.scores})
    window = build_window(
        app_state, min_date, max_date, after_cutoff or side_by_side, models, cutoffs=cutoffs, release=release
    )
    shown = window if after_cutoff else replace(window, cutoffs=None)
    described = shown.describe() if shown.active else None
    line = None
    if side_by_side and not after_cutoff:  # the ranked table holds the date window's cases, every model
        line = (
            f"{shown.describe()} (the ranked table); "
            "the side-by-side table adds each model's post-cutoff cases"
        )
    print_window(window, models, line)
    store = app_state.existing_store
    chosen = window_scoreset(store, scored, shown)
    if not side_by_side:
        return chosen, [], described
    boards = [
        ranked_leaderboard(
            one, resamples=settings.resamples, seed=settings.seed, allow_incomplete=allow_incomplete
        )[0]
        for one in (chosen, window_scoreset(store, scored, window))
    ]
    return chosen, by_cutoff(boards[0], boards[1], cutoff_registry(app_state, cutoffs)), described


def by_cutoff_table(rows: list[CutoffComparison]) -> Table:
    """The side-by-side table; its last column has the contamination table's sign (full − post)."""
    from livemed.cli.analysis_views import interval, num

    table = Table(
        title="all cases vs post-cutoff only (each model after its own training cutoff); "
        "all−post as contamination's full−post (positive: lower after the cutoff)"
    )
    columns = ("model", "cutoff", "all: mean", "95% CI", "n", "post-cutoff: mean", "95% CI", "n", "all−post")
    for column in columns:
        table.add_column(column, justify="left" if column == "model" else "right", no_wrap=True)
    for r in rows:
        cutoff = f"{r.cutoff}*" if r.simulated else str(r.cutoff or "unknown")
        table.add_row(
            r.model, cutoff,
            num(r.all_mean), interval(r.all_ci_low, r.all_ci_high), str(r.all_cases),
            num(r.post_mean), interval(r.post_ci_low, r.post_ci_high), str(r.post_cases),
            num(r.all_minus_post),
        )  # fmt: skip
    simulated = [r.model for r in rows if r.simulated]
    if simulated:
        table.caption = (
            f"* simulated cutoff: {', '.join(simulated)} have cutoffs declared by a simulation (see each "
            "cutoff's source), not real training cutoffs"
        )
    return table


def report_window(
    app_state: AppState, min_date: str | None, max_date: str | None, after_cutoff: bool, cutoffs: Path | None
) -> Window | None:
    """The report's window (None: every case), its cutoffs for every scored model."""
    from livemed.records import Score

    if min_date is None and max_date is None and not after_cutoff:
        return None
    models = sorted({s.model for s in app_state.existing_store.iter(Score)})
    window = build_window(app_state, min_date, max_date, after_cutoff, models, cutoffs=cutoffs)
    print_window(window, models)
    return window
