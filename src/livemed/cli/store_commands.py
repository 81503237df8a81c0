"""`livemed init`, `livemed store info|runs`, `livemed export`, `livemed import`."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import console, counted, err_console, state
from livemed.cli.root import app
from livemed.common.atomic import write_text
from livemed.config import CONFIG_FILE, starter_config
from livemed.errors import ConfigError, UserError
from livemed.records import RECORD_TYPES

store_app = typer.Typer(help="Inspect the store.", no_args_is_help=True)
app.add_typer(store_app, name="store")


@app.command()
def init(
    path: Path = typer.Argument(Path(CONFIG_FILE), metavar="FILE", help="Where to write the project file."),
    cutoff: str | None = typer.Option(
        None, metavar="YYYY-MM-DD", help="Cutoff date, e.g. 2025-06-30 (default: 90 days ago)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a commented starter livemed.toml."""
    if path.exists() and not force:
        raise UserError(f"{path} already exists (use --force to overwrite)")
    try:
        day = date.fromisoformat(cutoff) if cutoff else date.today() - timedelta(days=90)
    except ValueError:
        raise ConfigError(f"--cutoff must be a date like 2025-06-30, got {cutoff!r}") from None
    write_text(path, starter_config(day))
    console.print(f"wrote {path} (cutoff {day.isoformat()})")


@store_app.command("info")
def store_info(ctx: typer.Context) -> None:
    """Record counts by type, schema version and store location."""
    store = state(ctx).existing_store
    counts = store.count()
    table = Table()
    table.add_column("record kind")
    table.add_column("count", justify="right")
    for kind in RECORD_TYPES:
        table.add_row(kind, str(counts.get(kind, 0)))
    table.add_row("[dim]response cache[/]", str(store.cache_count()))
    console.print(f"store {store.location}")
    console.print(table)
    console.print(f"schema version {store.schema_version} · backend {store.dialect}")
    if counts.get("run"):
        from livemed.pipeline.runs import outcomes

        ended = " · ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes(store).items()))
        console.print(f"runs: {ended} (livemed store runs lists them)", markup=False)


@store_app.command("runs")
def store_runs(
    ctx: typer.Context,
    last: int = typer.Option(20, "--last", min=1, help="How many of the latest Runs to list."),
) -> None:
    """The latest Runs: command, start, outcome (a killed one shows interrupted), cost and error."""
    from livemed.pipeline.runs import as_seen
    from livemed.records import Run

    runs = sorted(state(ctx).existing_store.iter(Run), key=lambda r: r.started_at)[-last:]
    table = Table(title="runs")
    for column in ("run", "command", "started (UTC)", "outcome", "cost $", "error"):
        table.add_column(column, justify="right" if column == "cost $" else "left")
    for run in map(as_seen, runs):
        table.add_row(
            run.run_id,
            escape(run.command),
            f"{run.started_at:%Y-%m-%d %H:%M:%S}",
            run.outcome,
            f"{run.cost_usd:.4f}",
            escape(run.error or ""),
        )
    console.print(table)


@app.command("export")
def export_command(
    ctx: typer.Context,
    out: Path = typer.Argument(
        ...,
        metavar="PATH",
        help="A .jsonl file, e.g. backup.jsonl, or a folder for one file per record kind.",
    ),
    kind: list[str] = typer.Option(
        None,
        "--kind",
        "-k",
        metavar="KIND",
        help="A record kind to export, e.g. -k case -k rubric; repeat for several (default: all).",
    ),
) -> None:
    """Export records to JSONL."""
    from livemed.jsonl import export_store
    from livemed.records import record_type

    for name in kind or []:
        record_type(name)
    counts = export_store(state(ctx).existing_store, out, kind or None)
    for name, n in counts.items():
        console.print(
            f"exported {counted(n, 'record')} (all kinds)"
            if name == "all"
            else f"exported {counted(n, name)}"
        )
    console.print(f"to {out}")


@app.command("import")
def import_command(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(
        ..., metavar="FILE...", help="JSONL files written by `livemed export`."
    ),
    kind: str | None = typer.Option(
        None, "--kind", "-k", metavar="KIND", help="Record kind for lines without a 'kind' field, e.g. case."
    ),
) -> None:
    """Import records from JSONL; bad lines are reported with their line number and skipped."""
    from livemed.jsonl import import_jsonl
    from livemed.records import record_type

    if kind:
        record_type(kind)
    store = state(ctx).store
    bad = 0
    for path in files:
        written, errors = import_jsonl(store, path, default_kind=kind)
        for error in errors:
            err_console.print(f"[yellow]skipped[/] {escape(str(error))}", highlight=False)
        bad += len(errors)
        summary = f"{path}: imported {written} record(s), skipped {len(errors)} bad line(s)"
        console.print(summary, markup=False)
    if bad:
        raise typer.Exit(code=1)
