"""What `--help` prints in its type column: a name a user can read, never typer's raw types.

typer prints an option's Python type (`<bool>`, `<str>`, `<list[str]>`) where the option declares no
metavar, a flag's `<bool>` included, and an argument's type beside its name. livemed's options declare
their metavar (`MODEL`, `YYYY-MM-DD`, `FILE`, or their choices); `plain_types` clears the column where
there is nothing to type (a flag takes no value, and an argument's name is already its metavar) and
names the value of an option that declares no metavar after the option (`--cutoffs CUTOFFS`).
"""

from __future__ import annotations

from typing import Any

from typer import _click
from typer.core import TyperArgument, TyperOption


class NamedArgument(TyperArgument):
    """An argument whose help shows its name (or metavar) alone, without a type after it."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        del ctx
        return None


def plain_types(command: Any) -> None:
    """Clear the type column of every flag and argument of `command` and of its subcommands."""
    help_option = command.get_help_option(_click.Context(command))
    for param in (*command.params, help_option):
        if isinstance(param, TyperOption) and (param.is_flag or param.count):
            param.metavar = ""
        elif isinstance(param, TyperArgument):
            param.__class__ = NamedArgument
        elif isinstance(param, TyperOption) and param.metavar is None and param.name:
            param.metavar = param.name.upper()  # an option that declares none: its name, as argparse would
    for sub in getattr(command, "commands", {}).values():
        plain_types(sub)
