"""The typer application: the root options, `run()` (what `livemed.cli.main` calls) and the commands.

Each group of commands lives in its own module and registers itself on `app`, which lives with its
click group `LazyGroup` in `cli/root.py` (`from livemed.cli.root import app`): no command module
imports this one. The modules are imported lazily: `COMMANDS` names, for every command and group, the
module(s) that define it, and this module gives the root group its `Loader` (`COMMANDS` and `load`),
so `livemed scores` imports only the modules of `scores`, never `eval`'s, `report`'s or training's.
`--help` (the command list), an unknown command and `livemed.cli.app` import them all (`load_all`).
The root callback puts `run` in the invocation's `AppState.program`: what an executor's worker runs
(`cli/executors`). User errors print one line and exit 2; run errors exit 1.
"""

from __future__ import annotations

import importlib
import sys
import traceback

import typer
from rich.markup import escape

from livemed import __version__
from livemed.cli.context import AppState, console, err_console, widen_piped_output
from livemed.cli.root import LazyGroup, Loader, app
from livemed.errors import LivemedError

# Every command and group of `livemed` -> the modules (of livemed.cli) that define it. Their order is
# the order of the groups in `livemed --help`; tests/cli/test_lazy_commands.py checks it against what
# the modules register.
COMMANDS: dict[str, tuple[str, ...]] = {
    "demo": ("demo",),
    "init": ("store_commands",),
    "sources": ("harvest",),
    "harvest": ("harvest",),
    "curate": ("curate",),
    "rubrics": ("stage_commands",),
    "answer": ("stage_commands",),
    "grade": ("stage_commands",),
    "scores": ("score_commands",),
    "eval": ("eval_command",),
    "update": ("update_commands",),
    "schedule": ("update_commands",),
    "leaderboard": ("analysis",),
    "contamination": ("contamination",),
    "trends": ("analysis",),
    "funnel": ("analysis",),
    "cases": ("cases_commands",),
    "taxonomy": ("analysis",),
    "report": ("analysis",),
    "export": ("store_commands",),
    "import": ("store_commands",),
    "import-healthbench": ("interop_commands",),
    "export-healthbench": ("interop_commands",),
    "import-kqa": ("interop_commands",),
    "judges": ("agreement_command", "judge_modes", "judges_commands", "judges_validity", "train_commands"),
    "models": ("models_commands",),
    "release": ("release_commands",),
    "store": ("store_commands",),
    "evidence": ("evidence",),
    "review": ("review_commands",),
}
_loaded: set[str] = set()


def load(name: str | None = None) -> frozenset[str]:
    """Import the modules that define command `name` (every command's when None), so they register
    themselves on `app`, and arrange `--help`'s order and panels; the command modules imported so far."""
    wanted = COMMANDS.get(name, ()) if name is not None else [m for ms in COMMANDS.values() for m in ms]
    missing = [m for m in wanted if m not in _loaded]
    for module in missing:
        importlib.import_module(f"livemed.cli.{module}")
        _loaded.add(module)
    if missing:
        _arrange_help()
    return frozenset(_loaded)


def load_all() -> None:
    """Register every command (what `livemed --help` lists)."""
    load(None)


LazyGroup.loader = Loader(COMMANDS, load)


def _version(value: bool) -> None:
    if value:
        console.print(f"livemed {__version__}")
        raise typer.Exit()


class _Debug:
    """Whether `--debug` was given: an error's traceback is shown above its one line."""

    on = False


def _debug(value: bool) -> None:
    if value:
        _Debug.on = True


@app.callback()
def _root(
    ctx: typer.Context,
    store: str | None = typer.Option(
        None,
        "--store",
        metavar="PATH|URL",
        help="Store path or URL, e.g. results.db or postgresql+psycopg://user@host/livemed "
        "(default: $LIVEMED_STORE, livemed.toml, ./livemed.db).",
    ),
    config: str | None = typer.Option(
        None,
        "--config",
        "-c",
        metavar="FILE",
        help="Project file, e.g. weekly.toml (default: ./livemed.toml).",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, metavar="", help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False,
        "--debug",
        callback=_debug,
        is_eager=True,
        help="On an error, show its traceback above its line.",
    ),
) -> None:
    ctx.obj = AppState(store_override=store, config_path=config, program=run)  # `run`: what a worker runs
    ctx.call_on_close(ctx.obj.close)


def run(argv: list[str] | None = None) -> None:
    """Run the `livemed` program (see `livemed.cli.main`) and exit with its status.

    Every error ends as one line on stderr, `error: …` (with `--debug`, its traceback above it): exit 2
    for what the user can fix (a bad option or input, a file that cannot be written, a full disk), 1 for
    a run that failed (and for a bug, named as one), 130 for Ctrl-C and 143 for SIGTERM.
    """
    from livemed.cli import signals

    widen_piped_output()
    _Debug.on = False
    try:
        code = app(args=argv, prog_name="livemed", standalone_mode=False)
    except SystemExit:
        if signals.terminated():  # SIGTERM's KeyboardInterrupt, ended by an exit of its own
            sys.exit(signals.SIGTERM_EXIT)
        raise
    except Exception as exc:
        code = _failed(exc)
    if code and signals.terminated():  # click turned the SIGTERM's KeyboardInterrupt into exit 130
        code = signals.SIGTERM_EXIT
    sys.exit(code or 0)


def _failed(exc: Exception) -> int:
    """Say what went wrong in one line; return the exit status."""
    from livemed.common.atomic import os_error_line

    kinds = {cls.__name__ for cls in type(exc).__mro__}  # click's classes, or typer's copy of them
    if "NoArgsIsHelpError" in kinds:  # the help is on screen already
        return int(getattr(exc, "exit_code", 2))
    if "Abort" in kinds:
        return _say(exc, "aborted", 1)
    if "ClickException" in kinds:  # a usage error: a bad option or argument
        context = getattr(exc, "ctx", None)
        where = f"{context.command_path}: " if context is not None else ""
        return _say(exc, where + exc.format_message(), int(getattr(exc, "exit_code", 2)))  # type: ignore[attr-defined]
    if isinstance(exc, LivemedError):
        return _say(exc, str(exc), exc.exit_code)
    if isinstance(exc, OSError):
        return _say(exc, os_error_line(exc), 2)
    line = f"unexpected {type(exc).__name__}: {exc} (a bug in livemed; --debug shows where)"
    return _say(exc, line, 1)


def _say(exc: BaseException, line: str, code: int) -> int:
    if _Debug.on:
        traceback.print_exception(exc, file=sys.stderr)
    one = " ".join(line.split())  # one line, whatever the message held
    err_console.print(f"[bold red]error:[/] {escape(one)}", highlight=False, markup=True)
    return code


# The order and panels of `livemed --help`: the pipeline as a user meets it.
HELP_PANELS: dict[str, list[str]] = {
    "Start here": ["demo", "init"],
    "Pipeline": [
        "sources",
        "harvest",
        "evidence",
        "curate",
        "rubrics",
        "cases",
        "answer",
        "grade",
        "scores",
        "eval",
    ],
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

    order = {name: i for i, name in enumerate(COMMANDS)}  # commands outside the panels, and the groups
    app.registered_commands.sort(
        key=lambda info: (position.get(name_of(info), len(position)), order.get(name_of(info), len(order)))
    )
    app.registered_groups.sort(key=lambda group: order.get(group.name or "", len(order)))
    for group in app.registered_groups:  # a group's commands: by their module's place in COMMANDS
        assert group.typer_instance is not None
        modules = [f"livemed.cli.{m}" for m in COMMANDS.get(group.name or "", ())]
        rank = {m: i for i, m in enumerate(modules)}
        group.typer_instance.registered_commands.sort(
            key=lambda info: rank.get(getattr(info.callback, "__module__", ""), len(rank))
        )
    for info in app.registered_commands:
        info.rich_help_panel = panel_of.get(name_of(info), "More")
    for group in app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "", "Models, judges and the store")
