"""Helpers shared by the commands that call models: engine options and the usage summary."""

from __future__ import annotations

from rich.table import Table

from livemed.cli.context import AppState, console
from livemed.models.engine import CacheMode, Engine


def make_engine(
    app_state: AppState,
    *,
    no_cache: bool = False,
    cache_read_only: bool = False,
    max_cost: float | None = None,
) -> Engine:
    """An engine over the invocation's store and config, honouring --no-cache/--cache-read-only/--max-cost."""
    mode: CacheMode = "off" if no_cache else "read-only" if cache_read_only else "on"
    return Engine(store=app_state.store, config=app_state.config, cache=mode, max_cost=max_cost)


def print_usage(engine: Engine) -> None:
    """The per-model accounting table printed at the end of every command that called a model."""
    if not engine.accounting.by_model:
        return
    table = Table(title="model usage")
    for column in (
        "model",
        "calls",
        "cache hits",
        "retries",
        "failures",
        "prompt tok",
        "completion tok",
        "cost $",
    ):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, usage in sorted(engine.accounting.by_model.items()):
        table.add_row(
            model,
            str(usage.calls),
            str(usage.cache_hits),
            str(usage.retries),
            str(usage.failures),
            str(usage.prompt_tokens),
            str(usage.completion_tokens),
            f"{usage.cost_usd:.4f}",
        )
    console.print(table)
