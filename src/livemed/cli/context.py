"""Shared state of one CLI invocation: the configuration, a lazily opened store, and the program
(`AppState.program`: what an executor's worker runs, set by the root callback in cli/application.py, so
that no command or executor imports the application)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from livemed.config import Config, load_config, store_location
from livemed.errors import ConfigError, StoreOpenError

if TYPE_CHECKING:
    from livemed.domains import DomainPack
    from livemed.records.grading import RubricChoice
    from livemed.store import Store

DOMAIN = typer.Option(
    None,
    "--domain",
    metavar="PACK",
    help="Domain pack: medical, legal or a pack folder, e.g. ./packs/dental (default: `domain` in "
    "livemed.toml, else medical).",
)
RUBRIC_VERSION = typer.Option(
    "writer",
    "--rubric-version",
    metavar="writer|latest-approved",
    help="Which rubric of each case: the writer's (default), or its newest version reviewers approved, "
    "edited or struck criteria in (the writer's where none did).",
)
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def rubric_choice(value: str) -> RubricChoice:
    """A --rubric-version value, or a ConfigError naming the two there are."""
    choices: dict[str, RubricChoice] = {"writer": "writer", "latest-approved": "latest-approved"}
    if value in choices:
        return choices[value]
    raise ConfigError(f"--rubric-version must be writer or latest-approved, got {value!r}")


def counted(n: int, noun: str) -> str:
    """`1 rubric`, `33 rubrics`, `2 grade failures`: a count with its record kind in words."""
    words = noun.replace("_", " ")
    return f"{n} {words}" if n == 1 else f"{n} {words}s"


PIPED_WIDTH = 120  # columns of piped output (logs, CI) instead of rich's 80, so tables keep their model names


def widen_piped_output(width: int = PIPED_WIDTH) -> None:
    """Piped output gets `width` columns; $COLUMNS still wins, and a terminal uses its own width."""
    if not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        console.width = err_console.width = width


@contextmanager
def piped_columns(width: int = PIPED_WIDTH) -> Iterator[None]:
    """A command run inside this process for another (an executor's worker, `run_worker`) prints its
    captured output `width` columns wide as a command's own piped output is, through $COLUMNS for the
    time it runs (which `widen_piped_output` then leaves be), so this process's consoles are not
    widened for good; a $COLUMNS already set wins."""
    if os.environ.get("COLUMNS"):
        yield
        return
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        os.environ.pop("COLUMNS", None)


@dataclass
class AppState:
    store_override: str | None = None
    config_path: str | None = None
    program: Callable[[list[str]], None] | None = field(default=None, repr=False)  # `livemed ARGV`, run here
    _config: Config | None = field(default=None, repr=False)
    _store: Store | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

    def use_config(self, config: Config) -> None:
        """Run the rest of this invocation with `config` instead of the loaded one (`eval --concurrency`)."""
        self._config = config

    @property
    def store_location(self) -> str:
        return store_location(self.config, self.store_override)

    @property
    def store(self) -> Store:
        if self._store is None:
            from livemed.store import Store  # SQLAlchemy is imported when a command needs the store

            self._store = Store(self.store_location)
        return self._store

    @property
    def existing_store(self) -> Store:
        """The store for a read-only command: one that does not exist yet is an error, not created."""
        if self._store is None:
            from livemed.store.connect import sqlite_file

            path = sqlite_file(self.store_location)
            if path is not None and not path.exists():
                raise StoreOpenError(
                    f"no store at {path}: run `livemed demo` or `livemed harvest --source demo` (any source "
                    "of `livemed sources`) first, or import records (`livemed import --help`), or point "
                    "--store at a store"
                )
        return self.store

    def pack(self, option: str | None = None) -> DomainPack:
        """The domain pack: `--domain`, else livemed.toml's `domain`, else the medical pack."""
        from livemed.domains import resolve_domain

        return resolve_domain(option, self.config.domain, self.config.path)

    def close(self) -> None:
        """Close the store if this invocation opened it (PostgreSQL connections are not left to the GC)."""
        if self._store is not None:
            self._store.close()
            self._store = None


def state(ctx: typer.Context) -> AppState:
    """The AppState of this invocation (the root callback always sets it)."""
    obj = ctx.find_root().obj
    assert isinstance(obj, AppState)
    return obj
