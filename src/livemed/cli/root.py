"""The root of the `livemed` command tree: `app`, where every command module registers itself
(`from livemed.cli.root import app`), and its click group `LazyGroup`.

This module knows no command module: what a command name loads is the `Loader` that
`cli/application.py` (the only module that knows `COMMANDS`) sets as `LazyGroup.loader` when it is
imported, with the root options and `run()`. So a command module imports `app` from here and nothing
of the application that imports it lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperGroup

from livemed.cli.help_types import plain_types


@dataclass(frozen=True)
class Loader:
    """How the root group loads commands: `names`, every command and group of `livemed`; `load(name)`
    imports the modules of command `name` (every command's when None) and returns the command modules
    imported so far."""

    names: Collection[str]
    load: Callable[[str | None], frozenset[str]]


class LazyGroup(TyperGroup):
    """The root group: a command's modules are imported when that command is looked up (a group such
    as `judges` gets all of its modules, even when one of them was imported for another command);
    listing the commands (help, completion) or an unknown name imports them all (typos get suggestions)."""

    loader: ClassVar[Loader] = Loader((), lambda name: frozenset())  # set by cli/application.py
    _built_with: frozenset[str] | None = None  # the command modules imported when `commands` was built

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain_types(self)  # `--help`: no `<bool>` after a flag (cli/help_types.py)

    def _refresh(self, name: str | None) -> None:
        loaded = self.loader.load(name)
        if self._built_with != loaded:
            self._built_with = loaded
            self.commands = typer.main.get_group(app).commands
            plain_types(self)  # `--help`: no `<bool>` after a flag (cli/help_types.py)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.loader.names:
            self._refresh(cmd_name)
        elif cmd_name not in self.commands:
            self._refresh(None)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        self._refresh(None)
        return super().list_commands(ctx)


app = typer.Typer(
    name="livemed",
    cls=LazyGroup,
    help="Live, contamination-resistant evaluation of LLMs in medicine, with validated judges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

__all__ = ["LazyGroup", "Loader", "app"]
