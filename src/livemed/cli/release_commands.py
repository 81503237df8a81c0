"""`livemed release create|list|show|diff|retire|export|verify`: frozen, content-hashed snapshots, exports."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import console, state
from livemed.cli.root import app
from livemed.errors import ConfigError

release_app = typer.Typer(
    help="Versioned releases: freeze, retire, compare and export cases.", no_args_is_help=True
)
app.add_typer(release_app, name="release")


def _day(value: str, option: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{option} must be a date like 2026-11-30, got {value!r}") from None


@release_app.command("create")
def create(
    ctx: typer.Context,
    name: str = typer.Argument(
        ..., metavar="NAME", help="Release name (letters, digits, . _ -), used once, e.g. 2025-q3."
    ),
    until: str = typer.Option(
        ..., "--until", metavar="YYYY-MM-DD", help="Last publication date of its cases, e.g. 2025-09-30."
    ),
    status: str | None = typer.Option(
        None, "--status", metavar="draft|validated|accepted", help="Only cases with this status."
    ),
) -> None:
    """Freeze the cases published by --until that have a rubric and are not retired, with their hashes."""
    from livemed.releases.manifest import create_release

    release = create_release(state(ctx).existing_store, name, _day(until, "--until"), status=status)
    console.print(f"release {release.name}: {len(release.manifest)} case(s), hash {release.release_hash}")
    for key, n in sorted(release.counts.items()):
        console.print(f"  {key}: {n}", markup=False)


@release_app.command("list")
def list_releases(ctx: typer.Context) -> None:
    """The store's releases."""
    from livemed.records import Release

    table = Table(title="releases")
    for column in ("name", "until", "cases", "release hash", "created"):
        table.add_column(column, justify="right" if column == "cases" else "left", no_wrap=True)
    for release in sorted(state(ctx).existing_store.iter(Release), key=lambda r: r.created_at):
        table.add_row(
            release.name,
            release.until.isoformat(),
            str(len(release.manifest)),
            release.release_hash[:16] + "…",
            f"{release.created_at:%Y-%m-%d %H:%M}",
        )
    console.print(table)


@release_app.command("show")
def show(ctx: typer.Context, name: str = typer.Argument(..., metavar="NAME", help="Release name.")) -> None:
    """One release: its hash, dates, counts per source and what was left out."""
    from livemed.releases.manifest import get_release, items

    store = state(ctx).existing_store
    release = get_release(store, name)
    dates = sorted(item.case.published.date() for item in items(store, release))
    console.print(
        f"release {release.name} · until {release.until} · created {release.created_at:%Y-%m-%d %H:%M}"
    )
    console.print(f"release hash {release.release_hash}", markup=False)
    span = f" published {dates[0]} → {dates[-1]}" if dates else ""
    console.print(f"{len(release.manifest)} case(s){span}", markup=False)
    for key, n in sorted(release.counts.items()):
        console.print(f"  {key}: {n}", markup=False)


@release_app.command("diff")
def diff_command(
    ctx: typer.Context,
    a: str = typer.Argument(..., metavar="A", help="The earlier release."),
    b: str = typer.Argument(..., metavar="B", help="The later release."),
) -> None:
    """Cases added, removed (retired, with the reason) and changed (another content hash) from A to B."""
    from livemed.releases.manifest import diff, get_release

    store = state(ctx).existing_store
    found = diff(store, get_release(store, a), get_release(store, b))
    console.print(
        f"{a} → {b}: {len(found.added)} added, {len(found.removed)} removed, {len(found.changed)} changed, "
        f"{found.unchanged} unchanged",
        markup=False,
    )
    for key in found.added:
        console.print(f"+ {key}", markup=False)
    for key, why in found.removed:
        console.print(f"- {key} ({why})", markup=False)
    for key in found.changed:
        console.print(f"~ {key}", markup=False)


@release_app.command("retire")
def retire_command(
    ctx: typer.Context,
    case_id: str = typer.Argument(..., metavar="CASE", help="The case to retire (e.g. case:demo:2024-01-x)."),
    reason: str = typer.Option(
        ..., "--reason", metavar="TEXT", help="Why (kept with the retirement), e.g. 'advice superseded'."
    ),
) -> None:
    """Take a case out of every later release; releases made already keep it."""
    from livemed.releases.manifest import retire

    retirement = retire(state(ctx).existing_store, case_id, reason)
    console.print(f"retired {retirement.case_id}: {retirement.reason}", markup=False)


@release_app.command("export")
def export_command(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="Release name."),
    fmt: str = typer.Option(
        ..., "--format", metavar="jsonl|parquet|healthbench|hf|inspect", help="The export's format."
    ),
    out: Path = typer.Option(
        ..., "--out", metavar="DIR", help="Folder to write into (made if missing), e.g. exports/2025-q3."
    ),
    embargo_days: int = typer.Option(
        0,
        "--embargo-days",
        min=0,
        metavar="N",
        help="Keep the cases of the last N days up to the release date out.",
    ),
    include_text: bool = typer.Option(
        False,
        "--include-restricted-text",
        help="Also export the text of cases whose licence forbids redistribution (e.g. PubMed): private use.",
    ),
) -> None:
    """Write a release in an ecosystem format, with manifest.json (the release hash and every case's)."""
    from livemed.releases.exports import export_release
    from livemed.releases.manifest import get_release

    store = state(ctx).existing_store
    result = export_release(
        store, get_release(store, name), fmt, out, embargo_days=embargo_days, include_text=include_text
    )
    chosen = result.selection
    console.print(f"exported {result.written} case(s) of release {name} as {fmt} to {out}", markup=False)
    if chosen.embargoed:
        console.print(f"  held back by the {embargo_days}-day embargo: {chosen.embargoed}", markup=False)
    for licence, n in sorted(chosen.restricted.items()):
        console.print(f"  ids and links only ({licence}): {n}", markup=False)
    if result.left_out:
        console.print(
            f"  left out ({fmt} needs the text and a scorable rubric): {result.left_out}", markup=False
        )
    for path in result.files:
        console.print(f"  wrote {path}", markup=False)


@release_app.command("verify")
def verify_command(
    folder: Path = typer.Argument(
        ..., metavar="DIR", help="An export folder of any format (with its manifest.json)."
    ),
) -> None:
    """Recompute an export's hashes from its rows: exit 1 with what does not match."""
    from livemed.errors import RunError
    from livemed.releases.exports.verify import verify

    by_content, rows, problems = verify(folder)
    for problem in problems:
        console.print(f"[red]mismatch[/] {escape(problem)}", highlight=False)
    if problems:
        raise RunError(
            f"{folder}: {len(problems)} mismatch(es) against its manifest; the first: {problems[0]}"
        )
    console.print(
        f"{folder}: {rows} row(s) match the manifest; {by_content} rehashed from their content", markup=False
    )
