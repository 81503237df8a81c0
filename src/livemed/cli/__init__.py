"""The `livemed` command line: thin wrappers that read options, call a stage and print.

`main()` is the program. The typer application lives in `cli/application.py` (its root, `app`, where
the command modules register, in `cli/root.py`); a run imports only the module(s) of the command it
runs (`application.COMMANDS`), `livemed.cli.app` (tests, embedding) is the application with every
command registered. `livemed --version` answers before typer, rich, pydantic or any command module is
imported, and importing one helper module of the CLI (`livemed.cli.context`, …) does not import every
command. User errors print one line and exit 2; run errors exit 1.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from livemed import __version__

if TYPE_CHECKING:
    import typer

    app: typer.Typer
    HELP_PANELS: dict[str, list[str]]

_LAZY = ("app", "HELP_PANELS")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `livemed` program."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # the one answer that needs no command module
        print(f"livemed {__version__}")
        return
    from livemed.cli.application import run
    from livemed.common.heap import fewer_collections

    with fewer_collections():  # a batch program: the collector out of its way (livemed.common.heap)
        run(argv)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from livemed.cli import application

        application.load_all()  # `livemed.cli.app`: every command registered (the program loads lazily)
        return getattr(application, name)
    raise AttributeError(f"module 'livemed.cli' has no attribute {name!r}")


__all__ = ["HELP_PANELS", "app", "main"]
