"""`livemed sources` and `livemed harvest`."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, time
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import DOMAIN, console, err_console, state
from livemed.cli.root import app
from livemed.errors import ConfigError


def _date(value: str | None, option: str, *, end_of_day: bool = False) -> datetime | None:
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{option} must be a date like 2025-06-30, got {value!r}") from None
    return datetime.combine(day, time.max if end_of_day else time.min, UTC)


@app.command("sources")
def sources_command(ctx: typer.Context) -> None:
    """List the sources: what each is, whether it is configured, its API key and watermark."""
    from livemed.sources import SOURCES, source_settings
    from livemed.sources.run import WATERMARKS

    app_state = state(ctx)
    marks = app_state.store.state_items(WATERMARKS)
    table = Table(title="sources")
    for column in ("name", "what", "configured", "endpoint / file", "API key", "watermark"):
        table.add_column(column)
    for name in SOURCES:
        settings = source_settings(name, app_state.config)
        where = getattr(settings, "base_url", None) or getattr(settings, "path", None)
        where = where or ("(bundled)" if name == "demo" else "(not set)")
        key_env = getattr(settings, "api_key_env", None)
        key = "-" if key_env is None else f"{key_env} {'set' if os.environ.get(key_env) else 'not set'}"
        configured = "yes" if name in app_state.config.sources else "defaults"
        table.add_row(
            name,
            getattr(type(settings), "description", ""),
            configured,
            str(where),
            key,
            marks.get(name) or "-",
        )
    console.print(table)


@app.command("harvest")
def harvest_command(
    ctx: typer.Context,
    source: list[str] = typer.Option(
        ...,
        "--source",
        "-s",
        metavar="europepmc|pubmed|stackexchange|files|demo",
        help="A source (`livemed sources` lists them); repeat for several, e.g. -s europepmc -s pubmed.",
    ),
    since: str | None = typer.Option(
        None,
        metavar="YYYY-MM-DD",
        help="Keep documents published after this date, e.g. 2025-06-30 (default: cutoff, or the watermark).",
    ),
    until: str | None = typer.Option(
        None, metavar="YYYY-MM-DD", help="Last publication date to harvest, e.g. 2025-12-31 (default: now)."
    ),
    limit: int | None = typer.Option(
        None, min=1, metavar="N", help="At most this many new documents per source, e.g. 200."
    ),
    no_prefilter: bool = typer.Option(False, "--no-prefilter", help="Keep documents without pre-filters."),
    domain: str | None = DOMAIN,
) -> None:
    """Harvest dated documents into the store, pre-filter them and log rejections."""
    from livemed.pipeline.runs import track_run
    from livemed.prefilter import build_prefilters
    from livemed.sources import build_source
    from livemed.sources.run import harvest_sources

    app_state = state(ctx)
    config, store = app_state.config, app_state.store
    start, end = _date(since, "--since"), _date(until, "--until", end_of_day=True) or datetime.now(UTC)
    cutoff = _date(config.cutoff.isoformat(), "cutoff") if config.cutoff else None
    built = [build_source(name, config) for name in source]
    pack = app_state.pack(domain)
    prefilters = build_prefilters(config.prefilter, [] if no_prefilter else None, pack)
    settings: dict[str, Any] = {"sources": source, "since": since, "until": until, "limit": limit}
    settings["domain"] = pack.name
    settings["prefilters"] = prefilters.names
    with track_run(store, "harvest", settings=settings) as run:
        harvested = harvest_sources(
            store,
            built,
            prefilters,
            until=end,
            since=start,
            cutoff=cutoff,
            limit=limit,
            counts=run.counts,
            on_report=_print_report,
        )
        failed, unreadable = harvested.errors, harvested.unreadable
        if failed:  # the stored Run says so too (outcome "failed", the sources' errors)
            run.error = "; ".join(failed)
    for message in failed:
        err_console.print(f"[bold red]source failed:[/] {escape(message)}", highlight=False)
    if unreadable:  # the bad-input rule: records skipped -> exit 1 (the rest is stored)
        err_console.print(
            f"[bold red]error:[/] {unreadable} record(s) could not be read and were skipped (rejections "
            "of stage harvest, with where each came from: "
            "`livemed export -k rejection rejections.jsonl`); the rest was harvested",
            highlight=False,
        )
    if failed or unreadable:
        raise typer.Exit(code=1)


def _print_report(report: Any) -> None:
    window = f"{report.since:%Y-%m-%d} → {report.until:%Y-%m-%d}"
    status = "[red]failed[/]" if report.error else "ok"
    table = Table(title=f"{report.source}: {window} ({status})")
    table.add_column("outcome")
    table.add_column("reason")
    table.add_column("count", justify="right")
    table.add_row("fetched", "", str(report.fetched))
    table.add_row("[green]kept[/]", "", str(report.kept))
    table.add_row("already stored", "", str(report.skipped))
    table.add_row("outside window", "", str(report.out_of_window))
    for (stage, reason), n in sorted(report.rejected.items()):
        table.add_row(f"rejected ({stage})", reason, str(n))
    console.print(table)
    console.print(
        f"watermark {report.source}: {report.watermark_before or '-'} → {report.watermark_after or '-'}"
    )
