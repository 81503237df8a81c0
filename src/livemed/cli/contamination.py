"""`livemed contamination`: on the store's scores, or (`--scores FILE`) on per-item results from a file.

With `--scores` no store is opened: the file's rows become the same (model, case) rows the store
path analyses (`analysis/external.py`), and the tables, the terminal view and a contamination-only
HTML report (`reports/external.py`) are written. Rows left out (a missing or bad date, a bad score)
are listed, and the command exits 1 after writing the outputs for the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from livemed.cli.analysis import (
    CONVENTION,
    CUTOFFS,
    JUDGE,
    OUT,
    POLICY,
    RESAMPLES,
    SEED,
    _grading_tables,
    _scores,
    _settings,
    out_dir,
    wrote,
)
from livemed.cli.analysis_views import contamination_table
from livemed.cli.context import AppState, console, err_console, state
from livemed.cli.root import app
from livemed.cli.window_options import cutoff_registry, cutoffs_path

if TYPE_CHECKING:
    from livemed.analysis.collect import ScoreSet
    from livemed.analysis.contamination import AnalysisSettings, ContaminationResult
    from livemed.analysis.external import ExternalScores

SCORES = typer.Option(
    None,
    "--scores",
    metavar="FILE",
    help="Per-item results (CSV or JSONL: item_id, published, model, score), e.g. results.csv, "
    "instead of the store's scores.",
)
COLUMN = typer.Option(
    None,
    "--column",
    metavar="NAME=COLUMN",
    help="With --scores: NAME=COLUMN for a column of another name (e.g. score=acc); repeatable.",
)
REPORT = typer.Option(
    None,
    "--report",
    metavar="FILE",
    help="With --scores: the HTML report to write, e.g. contamination.html "
    "(default: OUT/contamination.html).",
)


@app.command("contamination")
def contamination_command(
    ctx: typer.Context,
    judge: str | None = JUDGE,
    convention: str = CONVENTION,
    policy: str = POLICY,
    cutoffs: Path | None = CUTOFFS,
    min_post: int | None = typer.Option(
        None, "--min-post", min=1, metavar="N", help="Post-cutoff cases needed, e.g. 30 (default 50)."
    ),
    out: Path | None = OUT,
    seed: int | None = SEED,
    resamples: int | None = RESAMPLES,
    scores: Path | None = SCORES,
    column: list[str] = COLUMN,
    report: Path | None = REPORT,
) -> None:
    """Full set vs post-cutoff subset per model, pre/post tests, drift control, BH across models.

    With --scores FILE: on per-item results from a CSV or JSONL file (no store needed); rows with a
    missing or bad date or score are listed and left out (exit 1 after writing the rest)."""
    from livemed.analysis.contamination import analyse
    from livemed.analysis.table_files import write_table
    from livemed.errors import UserError

    app_state = state(ctx)
    s = _settings(app_state, seed, resamples, convention)
    if min_post is not None:
        s = s.model_copy(update={"min_post": min_post})
    if scores is not None:
        if judge is not None or policy != "strict":
            raise UserError(
                "--judge and --policy choose among the store's scores; they do not apply to --scores"
            )
        _external(app_state, scores, column or [], cutoffs, s, out, report)
        return
    if column or report is not None:
        raise UserError(
            "--column and --report go with --scores FILE (livemed report writes the store's report)"
        )
    scored = _scores(app_state, judge, convention, policy)
    _warn_mtime_dates(app_state, scored)
    result = analyse(scored.rows, cutoff_registry(app_state, cutoffs), s)
    console.print(contamination_table(result))
    folder = out_dir(app_state, out)
    paths = write_table(folder, "contamination", result.rows, result.summary, context=scored.context())
    wrote(paths + _grading_tables(folder, scored))


def _warn_mtime_dates(app_state: AppState, scored: ScoreSet) -> None:
    from livemed.analysis.collect import mtime_dated

    n = mtime_dated(app_state.store, {r.case_id for r in scored.rows})
    if n:
        err_console.print(
            f"[yellow]warning:[/] {n} case(s) are dated by their input file's modification time, not by "
            "publication: their pre/post-cutoff split is meaningless (re-import with --published --replace)"
        )


def _external(
    app_state: AppState,
    path: Path,
    columns: list[str],
    cutoffs: Path | None,
    settings: AnalysisSettings,
    out: Path | None,
    report: Path | None,
) -> None:
    """The contamination analysis on a scores file: tables, terminal view, HTML report; no store."""
    from livemed.analysis.contamination import analyse
    from livemed.analysis.external import parse_columns, read_scores
    from livemed.analysis.table_files import write_table
    from livemed.errors import RunError, UserError
    from livemed.reports.external import ExternalReport, write_external

    read = read_scores(path, parse_columns(columns))
    console.print(
        f"[dim]{read.rows_read} rows read from {escape(str(path))} · {len(read.rows)} (model, item) scores "
        f"· {len(read.left_out)} rows left out · {settings.convention} scoring[/]"
    )
    for line in read.left_out_lines():
        err_console.print(f"[yellow]left out,[/] {escape(line)}")
    if not read.rows:
        raise UserError(f"{path}: no usable rows (all {read.rows_read} left out, listed above)")
    registry_file = cutoffs_path(app_state, cutoffs)
    result = analyse(read.rows, cutoff_registry(app_state, cutoffs), settings)
    _check_cutoffs(result, read, registry_file)
    console.print(contamination_table(result))
    folder = out_dir(app_state, out)
    context = {"convention": settings.convention, **read.context(), "cutoffs_file": _name(registry_file)}
    paths = write_table(folder, "contamination", result.rows, result.summary, context=context)
    data = ExternalReport("livemed contamination", read, result, settings, _name(registry_file))
    paths.append(write_external(data, report or folder / "contamination.html"))
    wrote(paths)
    if read.left_out:
        raise RunError(
            f"{len(read.left_out)} of {read.rows_read} rows of {path} were left out (listed above); "
            "the tables and the report use the rest"
        )


def _name(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _check_cutoffs(result: ContaminationResult, read: ExternalScores, cutoffs: Path | None) -> None:
    """A one-line error when no model has a cutoff; a listing when some have none."""
    from livemed.errors import UserError

    untested = [r.model for r in result.rows if r.status == "no cutoff"]
    where = f"in {cutoffs}" if cutoffs else "in the bundled registry (give --cutoffs FILE)"
    if untested and len(untested) == len(result.rows):
        raise UserError(
            f"no model of {read.origin} has a training cutoff {where}: {', '.join(untested)}; "
            "add them to the cutoff file (CSV: model,cutoff)"
        )
    if untested:
        err_console.print(
            f"[yellow]no cutoff: not tested:[/] {escape(', '.join(untested))} (no cutoff {where})"
        )
