"""Helpers shared by the commands that call models: engine options, the run, live progress and the
usage summary.

```python
engine = make_engine(state(ctx), no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
with model_run(                      # the usage printed if it raises (a failure, a --max-cost stop)
    store, "grade", engine, settings=settings, models=[judge], lease=f"grade:{judge}",
    progress=progress_for(engine, judge, f"grading with {judge}"),
) as run:                            # the `Run` (`pipeline.runs.track_run`), holding its lease
    result = asyncio.run(work(engine))
    settle(run, result, "criteria")
print_result(...)                    # the command's own lines
finish_run(engine, run)              # the usage table (and buffered cache entries written); exit 1
                                     # when calls failed (`raise_for_calls`)
```
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from livemed.cli import signals
from livemed.cli.context import AppState, console
from livemed.models.accounting import EngineEvent
from livemed.models.engine import CacheMode, Engine
from livemed.records import Usage

if TYPE_CHECKING:
    from livemed.records import Run
    from livemed.store import Store

STATS = (
    "{task.fields[rate]} calls/s · {task.fields[hits]} cached · {task.fields[retries]} retries · "
    "{task.fields[failures]} failed · {task.fields[tokens]} tok · ${task.fields[cost]}"
)


def make_engine(
    app_state: AppState,
    *,
    no_cache: bool = False,
    cache_read_only: bool = False,
    max_cost: float | None = None,
) -> Engine:
    """An engine over the invocation's store and config, honouring --no-cache/--cache-read-only/--max-cost.

    SIGTERM then ends the command like Ctrl-C (`livemed.cli.signals`): the cache is written on the way out.
    """
    signals.install()
    mode: CacheMode = "off" if no_cache else "read-only" if cache_read_only else "on"
    return Engine(store=app_state.store, config=app_state.config, cache=mode, max_cost=max_cost)


@contextmanager
def model_run(
    store: Store,
    command: str,
    engine: Engine,
    *,
    settings: dict[str, Any] | None = None,
    models: Sequence[str] = (),
    lease: str | Sequence[str] | None = None,
    progress: AbstractContextManager[object] | None = None,
) -> Iterator[Run]:
    """The block of a command that calls models: the usage printed if it raises (`usage_on_failure`),
    its `Run` with the engine's usage and its lease(s) (`track_run`), then `progress` (if any) shown
    while it runs. Yields the Run; end the command with `finish_run`."""
    from livemed.pipeline.runs import track_run

    with ExitStack() as stack:
        stack.enter_context(usage_on_failure(engine))
        run = stack.enter_context(
            track_run(store, command, settings=settings, models=models, engine=engine, lease=lease)
        )
        if progress is not None:
            stack.enter_context(progress)
        yield run


def finish_run(engine: Engine, run: Run) -> None:
    """The end of a command that called models, after its own output: the usage table, then exit 1
    with the failure line when some items' calls failed (`pipeline.runs.raise_for_calls`)."""
    from livemed.pipeline.runs import raise_for_calls

    print_usage(engine)
    raise_for_calls(run)


class EngineProgress:
    """A rich progress line fed by engine events: calls/s, cache hits, retries, failures, tokens, cost."""

    def __init__(self, engine: Engine, progress: Progress, task: TaskID, *, refresh_s: float = 0.1) -> None:
        self.engine = engine
        self.progress = progress
        self.task = task
        self.refresh_s = refresh_s
        self._start_finished = engine.finished
        self._started = time.monotonic()
        self._last = 0.0

    def set_total(self, total: int | None) -> None:
        self.progress.update(self.task, total=total)

    def __call__(self, event: EngineEvent) -> None:
        now = time.monotonic()
        if now - self._last >= self.refresh_s:
            self._last = now
            self.refresh()

    def refresh(self) -> None:
        """Copy the engine's totals into the progress line."""
        totals = self.engine.accounting.totals()
        done = self.engine.finished - self._start_finished
        elapsed = max(time.monotonic() - self._started, 1e-6)
        self.progress.update(
            self.task,
            completed=done,
            rate=f"{done / elapsed:.1f}",
            hits=totals.cache_hits,
            retries=totals.retries,
            failures=totals.failures,
            tokens=totals.prompt_tokens + totals.completion_tokens,
            cost=f"{totals.cost_usd:.4f}",
        )


def _progress(out: Console | None, *extra: TextColumn) -> Progress:
    """Spinner, description, bar, done/total, then `extra` columns and the elapsed time."""
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    return Progress(*columns, *extra, TimeElapsedColumn(), console=out or console)


@contextmanager
def engine_progress(
    engine: Engine,
    description: str = "calling models",
    *,
    total: int | None = None,
    out: Console | None = None,
) -> Iterator[EngineProgress]:
    """Show live progress of the engine's calls while the block runs (a final line when not a terminal)."""
    progress = _progress(out, TextColumn(STATS))
    task = progress.add_task(
        description, total=total, rate="0.0", hits=0, retries=0, failures=0, tokens=0, cost="0.0000"
    )
    display = EngineProgress(engine, progress, task)
    engine.observers.append(display)
    try:
        with progress:
            yield display
            display.refresh()
    finally:
        engine.observers.remove(display)


@contextmanager
def usage_on_failure(engine: Engine) -> Iterator[None]:
    """Print the usage table if the block raises (a failure or a --max-cost stop), then re-raise."""
    try:
        yield
    except BaseException:
        print_usage(engine)
        raise


def print_usage(engine: Engine) -> None:
    """The accounting table (per model, and per stage where a model served several) printed at the end
    of every command that called a model.

    It also writes any response-cache entries still buffered, so a command that forgot
    `await engine.aclose()` loses nothing.
    """
    engine.flush()
    if not engine.accounting.by_model:
        return
    table = Table(title="model usage")
    columns = (
        "model",
        "calls",
        "cache hits",
        "retries",
        "failures",
        "prompt tok",
        "completion tok",
        "cost $",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "model" else "right")
    stages = engine.accounting.by_stage
    for model, usage in sorted(engine.accounting.by_model.items()):
        table.add_row(model, *_usage_cells(usage))
        served = sorted((stage, by_model[model]) for stage, by_model in stages.items() if model in by_model)
        if len(served) > 1:
            for stage, part in served:
                table.add_row(f"  {stage}", *_usage_cells(part), style="dim")
    console.print(table)
    estimated = engine.accounting.totals().estimated_calls
    if estimated:
        console.print(
            f"~ tokens (and cost) estimated for {estimated} call(s): the endpoint sent no usage", markup=False
        )
    print_compliance(engine)
    for model, reason in engine.disabled_models().items():
        console.print(f"[red]{escape(model)} was disabled[/]: {escape(reason)}")


def _usage_cells(usage: Usage) -> list[str]:
    counts = (usage.calls, usage.cache_hits, usage.retries, usage.failures)
    mark = "~" if usage.estimated_calls else ""  # some of these tokens are estimated
    return [
        *map(str, counts),
        f"{mark}{usage.prompt_tokens}",
        f"{mark}{usage.completion_tokens}",
        f"{mark}{usage.cost_usd:.4f}",
    ]


def print_compliance(engine: Engine) -> None:
    """Structured-output compliance per model: valid first try, after one repair, failed."""
    rows = [(model, engine.compliance_of(model)) for model in sorted(engine.compliance)]
    rows = [(model, c) for model, c in rows if c.total]
    if not rows:
        return
    table = Table(title="structured output")
    for column in ("model", "outputs", "valid first try", "repaired", "failed", "compliance"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, c in rows:
        table.add_row(model, str(c.total), str(c.first_try), str(c.repaired), str(c.failed), f"{c.rate:.1%}")
    console.print(table)


def progress_for(
    engine: Engine, model_id: str, description: str, *, total: int | None = None
) -> AbstractContextManager[object]:
    """Live call progress (calls, tokens, cost) for a real model; items done, of `total` where it is
    known, for an offline baseline (a model's calls have no known total: repairs, retries, cache hits)."""
    if model_id.startswith("offline/"):
        return stage_progress(description, total=total)
    return engine_progress(engine, description)


@contextmanager
def stage_progress(
    description: str, *, total: int | None = None, out: Console | None = None
) -> Iterator[Progress]:
    """A progress line counting the items the running stage has finished (`pipeline.runner.item_progress`)."""
    from livemed.pipeline.runner import item_progress

    progress = _progress(out)
    task = progress.add_task(description, total=total)
    token = item_progress.set(lambda done: progress.update(task, completed=done))
    try:
        with progress:
            yield progress
    finally:
        item_progress.reset(token)
