"""The command line that gives a worker the same command: rebuilt from click's parsed parameters.

Typer carries its own copy of click, so parameters are read by their attributes (`param_type_name`,
`opts`, `is_flag`, …), not by class."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def command_line(ctx: Any, **replace: Any) -> list[str]:
    """`livemed [root options] COMMAND [options] [arguments]` as parsed in `ctx` (the command's context),
    with the parameters named in `replace` set to new values. Paths are made absolute."""
    parts: list[str] = []
    chain = []
    current = ctx
    while current is not None:
        chain.append(current)
        current = current.parent
    for level in reversed(chain):
        if level.parent is not None and level.info_name:
            parts.append(level.info_name)
        values = {**level.params, **{k: v for k, v in replace.items() if k in level.params}}
        parts += _options(level.command, values)
    return parts


def _options(command: Any, values: dict[str, Any]) -> list[str]:
    options: list[str] = []
    arguments: list[str] = []
    for param in command.params:
        value = values.get(param.name or "")
        if param.param_type_name == "argument":
            items = value if isinstance(value, list | tuple) else [value]
            arguments += [_text(item) for item in items if item is not None]
            continue
        if param.param_type_name != "option" or param.is_eager or value is None:
            continue
        if value == param.default and not param.multiple:
            continue
        if param.is_flag and param.secondary_opts:
            options.append(param.opts[0] if value else param.secondary_opts[0])
        elif param.is_flag:
            if value:
                options.append(param.opts[0])
        elif param.multiple or isinstance(value, list | tuple):
            for item in value:
                options += [param.opts[0], _text(item)]
        else:
            options += [param.opts[0], _text(value)]
    return options + (["--", *arguments] if arguments else [])


def _text(value: Any) -> str:
    if isinstance(value, Path):
        return str(value.resolve())
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(getattr(value, "value", value))


__all__ = ["command_line"]
