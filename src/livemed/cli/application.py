"""The typer application: the root options, `run()` (what `livemed.cli.main` calls) and the commands.

Each group of commands lives in its own module and registers itself on `app` (`from livemed.cli
import app` resolves to this module's `app`); the modules are imported at the bottom of this file.
User errors print one line and exit 2; run errors exit 1.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from livemed import __version__
from livemed.cli.context import AppState, console, err_console, widen_piped_output
from livemed.errors import LivemedError

app = typer.Typer(
    name="livemed",
    help="Live, contamination-resistant evaluation of LLMs in medicine, with validated judges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        console.print(f"livemed {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    store: str | None = typer.Option(
        None, "--store", help="Store path or URL (default: $LIVEMED_STORE, livemed.toml, ./livemed.db)."
    ),
    config: str | None = typer.Option(None, "--config", "-c", help="Project file (default: ./livemed.toml)."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, metavar="", help="Print the version and exit."
    ),
) -> None:
    ctx.obj = AppState(store_override=store, config_path=config)
    ctx.call_on_close(ctx.obj.close)


def run(argv: list[str] | None = None) -> None:
    """Run the `livemed` program (see `livemed.cli.main`)."""
    from livemed.cli import signals

    widen_piped_output()
    try:
        app(args=argv, prog_name="livemed")
    except SystemExit:
        if signals.terminated():  # click turned the SIGTERM's KeyboardInterrupt into "Aborted!"
            sys.exit(signals.SIGTERM_EXIT)
        raise
    except LivemedError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True)
        sys.exit(exc.exit_code)


# Command modules register themselves on `app`.
from livemed.cli import (  # noqa: E402,F401
    analysis,
    contamination,
    demo,
    eval_command,
    grading_commands,
    harvest,
    models_commands,
    release_commands,
    store_commands,
    update_commands,
)
from livemed.cli import curate as curate_commands  # noqa: E402,F401
from livemed.cli import evidence as evidence_commands  # noqa: E402,F401

# The order and panels of `livemed --help`: the pipeline as a user meets it.
HELP_PANELS: dict[str, list[str]] = {
    "Start here": ["demo", "init"],
    "Pipeline": ["sources", "harvest", "evidence", "curate", "rubrics", "answer", "grade", "scores", "eval"],
    "Live operation": ["update", "schedule", "release"],
    "Analysis": ["leaderboard", "contamination", "trends", "funnel", "taxonomy", "report"],
    "Data exchange": ["export", "import", "import-healthbench", "export-healthbench", "import-kqa"],
}


def _arrange_help() -> None:
    position = {name: i for i, name in enumerate(n for names in HELP_PANELS.values() for n in names)}
    panel_of = {name: panel for panel, names in HELP_PANELS.items() for name in names}

    def name_of(info: typer.models.CommandInfo) -> str:
        assert info.callback is not None
        return info.name or info.callback.__name__.replace("_", "-")

    app.registered_commands.sort(key=lambda info: position.get(name_of(info), len(position)))
    for info in app.registered_commands:
        info.rich_help_panel = panel_of.get(name_of(info), "More")
    for group in app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "", "Models, judges and the store")


_arrange_help()
