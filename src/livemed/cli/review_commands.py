"""`livemed review serve|invite|sample|export|import`: clinicians in the loop (the review web app)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import console, err_console, state
from livemed.cli.root import app
from livemed.errors import ConfigError

review_app = typer.Typer(
    help="Clinician review: invite reviewers, draw the audit sample, serve the review app, move labels.",
    no_args_is_help=True,
)
app.add_typer(review_app, name="review")

WEB_PACKAGES = {  # import name -> package of the `review` extra
    "starlette": "starlette",
    "uvicorn": "uvicorn",
    "itsdangerous": "itsdangerous",
    "python_multipart": "python-multipart",
}
DEFAULT_PORT = 8765
PORT = typer.Option(DEFAULT_PORT, "--port", min=1, max=65535, metavar="PORT", help="Port of the review app.")
HOST = typer.Option(
    "127.0.0.1", "--host", metavar="ADDRESS", help="Address to listen on (0.0.0.0 opens it to the network)."
)
JUDGE = typer.Option(
    None,
    "--judge",
    metavar="MODEL",
    help="Grader whose audit sample the audit queue shows, e.g. offline/lexical (default: the one drawn).",
)


@review_app.command("serve")
def serve(ctx: typer.Context, host: str = HOST, port: int = PORT, judge: str | None = JUDGE) -> None:
    """Serve the review app until Ctrl-C (reviewers open the links `livemed review invite NAME` prints)."""
    _check_installed()
    import uvicorn

    from livemed.review.app import make_app

    web = make_app(state(ctx).existing_store, judge=judge)
    console.print(f"review app on http://{host}:{port}/ (Ctrl-C stops it)", markup=False)
    uvicorn.run(web, host=host, port=port, log_level="warning")


def _check_installed() -> None:
    """The review app's packages (the `review` extra) are installed, or a one-line error naming one."""
    import importlib.util

    from livemed.errors import MissingDependencyError

    for module, package in WEB_PACKAGES.items():
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(package, "review")


@review_app.command("invite")
def invite_command(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="Reviewer name (letters, digits, _ . @ -)."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS", help="Host of the link."),
    port: int = PORT,
) -> None:
    """Print a reviewer's invite link; inviting them again makes a new link and ends the old one."""
    from pydantic import ValidationError

    from livemed.review.tokens import invite

    try:
        token = invite(state(ctx).existing_store, name)
    except ValidationError:
        raise ConfigError(f"reviewer name {name!r}: use letters, digits and _ . @ - (80 at most)") from None
    console.print(f"invite link for {name} (shown once; keep it private):", markup=False)
    console.print(f"http://{host}:{port}/login?token={token}", markup=False)


@review_app.command("sample")
def sample_command(
    ctx: typer.Context,
    judge: str = typer.Option(..., "--judge", metavar="MODEL", help="Grader to audit, e.g. offline/lexical."),
    size: int = typer.Option(..., "--size", min=1, metavar="N", help="Verdicts to draw, e.g. 300."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the draw."),
    double_share: float = typer.Option(
        0.1, "--double-share", min=0.0, max=1.0, metavar="F", help="Share of items for two reviewers."
    ),
) -> None:
    """Draw the grader's audit sample (stratified by axis and verdict); it replaces an earlier one."""
    from livemed.review.sample import draw_sample

    store = state(ctx).existing_store
    sample = draw_sample(store, judge, size, seed=seed, double_share=double_share)
    store.put([sample])
    table = Table(title=f"audit sample of {judge}: {len(sample.items)} verdict(s), seed {seed}")
    for column in ("stratum", "population", "drawn", "inclusion"):
        table.add_column(column, justify="left" if column == "stratum" else "right")
    for stratum in sample.strata:
        table.add_row(stratum.key, str(stratum.population), str(stratum.drawn), f"{stratum.inclusion:.3f}")
    console.print(table)
    doubles = sum(item.double for item in sample.items)
    console.print(f"{doubles} item(s) for two reviewers", markup=False)


@review_app.command("export")
def export_command(
    ctx: typer.Context,
    file: Path = typer.Argument(..., metavar="FILE", help="JSONL file to write, e.g. labels.jsonl."),
) -> None:
    """Write every reviewer's labels to a JSONL file."""
    from livemed.review.labels import export_labels

    written = export_labels(state(ctx).existing_store, file)
    console.print(f"{file}: wrote {written} label(s)", markup=False)


@review_app.command("import")
def import_command(
    ctx: typer.Context,
    file: Path = typer.Argument(..., metavar="FILE", help="Labels as JSONL, e.g. labels.jsonl."),
) -> None:
    """Read labels from a JSONL file; a bad line is reported and skipped, the rest are stored (exit 1)."""
    from livemed.review.labels import import_labels

    written, errors = import_labels(state(ctx).store, file)
    for error in errors:
        err_console.print(f"[yellow]skipped[/] {escape(str(error))}", highlight=False)
    console.print(f"{file}: imported {written} label(s), skipped {len(errors)} bad line(s)", markup=False)
    if errors:
        raise typer.Exit(code=1)
