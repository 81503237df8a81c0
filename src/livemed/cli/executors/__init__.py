"""Executors: where a command's items run.

- `inprocess` (the default): this process, as every command always has (`executors.inprocess`).
- `ray` (`livemed[ray]`): `[executor] workers` Ray tasks on a Ray cluster (a local instance, an
  existing one with `address = "auto"`, or `ray://HOST:10001`), each running the same command with
  the in-process executor against the same PostgreSQL store. The workers partition the items by
  claims (`store.claims`), one Ray actor holds the request- and token-rate limits of every model for
  all of them (`executors.ray.RateActor`), each worker keeps its own per-model concurrency, and the
  response cache is the store's. Ray is imported only here, only for `ray`.

A command calls `run_elsewhere(ctx, option)` first: False means "run here". The program a worker runs
(`livemed.cli.application.run`) comes from the invocation's `AppState.program`, set by the root
callback: the executors import nothing of the application, which loads the commands that import them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from livemed.errors import ConfigError

if TYPE_CHECKING:
    import typer

    from livemed.cli.context import AppState

KINDS = ("inprocess", "ray")
HELP = "Where the items run: inprocess (default) or ray (default: \\[executor] kind in livemed.toml)."


def choose(option: str | None, configured: str) -> str:
    kind = option or configured
    if kind not in KINDS:
        raise ConfigError(f"--executor must be one of {', '.join(KINDS)}, got {kind!r}")
    return kind


def run_elsewhere(ctx: typer.Context, option: str | None) -> bool:
    """Run this command on the chosen executor unless it is this process; True when it ran there."""
    from livemed.cli.context import state

    app_state = state(ctx)
    settings = app_state.config.executor
    if choose(option, settings.kind) == "inprocess":
        return False
    from livemed.cli.executors.argv import command_line
    from livemed.cli.executors.ray import fan_out

    assert app_state.program is not None, "the root callback sets the program"
    argv = command_line(ctx, executor="inprocess", config=_config_path(app_state))
    fan_out(app_state.program, argv, settings, app_state.store_location)
    return True


def _config_path(app_state: AppState) -> str | None:
    path = app_state.config.path
    return str(Path(path).resolve()) if path is not None else None


__all__ = ["HELP", "KINDS", "choose", "run_elsewhere"]
