"""`livemed update` (one incremental pass of the live loop) and `livemed schedule` (updates on a cadence)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import AppState, console, err_console, state
from livemed.cli.executors import HELP as EXECUTOR_HELP
from livemed.cli.executors import run_elsewhere
from livemed.cli.root import app
from livemed.errors import RunError, StageBusyError

if TYPE_CHECKING:
    from livemed.live.update import StageSummary, Tools, UpdateSummary
    from livemed.models import Engine
    from livemed.records import Run

UNTIL = typer.Option(
    None,
    "--until",
    metavar="YYYY-MM-DD",
    help="Last publication date to harvest, e.g. 2025-12-31 (default: now).",
)
WAIT = typer.Option(
    0.0,
    "--wait",
    min=0,
    metavar="SECONDS",
    help="If another update holds the store lock, wait up to this many seconds.",
)


@app.command("update")
def update_command(
    ctx: typer.Context,
    until: str | None = UNTIL,
    wait: float = WAIT,
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0,
        metavar="USD",
        help="Spending limit in US dollars, e.g. 20 (default: \\[update]).",
    ),
    executor: str | None = typer.Option(None, "--executor", metavar="inprocess|ray", help=EXECUTOR_HELP),
) -> None:
    """Harvest from the watermarks, then curate, write rubrics, answer, grade and score what is new.

    Models come from `[update]` in livemed.toml; a stage with no model configured is skipped (said
    so). Idempotent and resumable: what is done is never done (or paid for) again."""
    if run_elsewhere(ctx, executor):
        return
    run = update_once(state(ctx), until, wait=wait, max_cost=max_cost)
    fail_for(run)


@app.command("schedule")
def schedule_command(
    ctx: typer.Context,
    every: str = typer.Option(
        "7d", "--every", metavar="INTERVAL", help="Cadence: a number and s, m, h, d or w (e.g. 12h)."
    ),
    runs: int | None = typer.Option(
        None, "--runs", min=1, metavar="N", help="Stop after this many updates, e.g. 4 (default: never)."
    ),
    show_history: bool = typer.Option(
        False, "--history", help="Print the last 20 scheduled updates and exit."
    ),
) -> None:
    """Run `livemed update` every --every, under the store lock, keeping a short history in the store.

    A tick that finds another update running is recorded as busy; the schedule goes on. Stop it with
    Ctrl-C or SIGTERM (an update in progress is interrupted and resumed by the next one)."""
    from livemed.live.schedule import history, parse_every, run_schedule

    app_state = state(ctx)
    if show_history:
        print_history(history(app_state.store))
        return
    cadence = parse_every(every)
    console.print(f"updating every {every} ({cadence}); Ctrl-C to stop", markup=False)
    done = run_schedule(
        app_state.store,
        lambda: update_once(app_state, None, wait=0.0, max_cost=None),
        cadence,
        runs=runs,
        on_tick=print_tick,
    )
    last = done[-1] if done else None
    if last is not None and last["outcome"] in ("failed", "partial"):
        raise RunError(
            f"the last scheduled update ({last['run_id'] or '-'}) {last['outcome']}: {last['error']}"
        )


def print_tick(item: dict[str, Any]) -> None:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    line = f"{when} update {item['run_id'] or '-'}: {item['outcome']} in {item['seconds']:.1f} s"
    console.print(line + (f" — {item['error']}" if item.get("error") else ""), markup=False)


def print_history(items: list[tuple[str, dict[str, Any]]]) -> None:
    table = Table(title="scheduled updates (latest last)")
    for column in ("started", "update", "outcome", "seconds", "new", "cost $"):
        table.add_column(column, justify="right" if column in ("seconds", "cost $") else "left")
    for started, item in items:
        new = ", ".join(f"{k} {v}" for k, v in (item.get("new") or {}).items()) or "-"
        table.add_row(
            started[:19], item.get("run_id") or "-", item["outcome"], f"{item['seconds']:.1f}", new,
            f"{item.get('cost_usd', 0.0):.4f}",
        )  # fmt: skip
    console.print(table)


def update_once(app_state: AppState, until: str | None, *, wait: float, max_cost: float | None) -> Run:
    """One update under the store lock, waiting up to `wait` seconds for another update to end."""
    from livemed.live.update import run_update

    plan = app_state.config.update
    if max_cost is not None:
        plan = plan.model_copy(update={"max_cost": max_cost})
    tools = build_tools(app_state, until)
    deadline = time.monotonic() + wait
    while True:
        try:
            summary, run = run_update(app_state.store, plan, tools, on_stage=print_stage)
            break
        except StageBusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(min(5.0, max(deadline - time.monotonic(), 0.1)))
    print_summary(summary, run)
    return run


def fail_for(run: Run) -> None:
    """Exit 1 with the update's one failure line (failed calls, a failing source, unreadable records)."""
    if run.error:
        raise RunError(f"update {run.run_id}: {run.error}")


def build_tools(app_state: AppState, until: str | None) -> Tools:
    """The engines, curation chain, models, sources and pre-filters of `[update]`, as the single-stage
    commands build them (`make_engine`, `curate`'s chain, `bind_model`, `build_source`)."""
    from livemed.cli.curate import _chain
    from livemed.cli.harvest import _date
    from livemed.live.update import Tools
    from livemed.models import bind_model
    from livemed.prefilter import build_prefilters
    from livemed.sources import build_source

    config = app_state.config
    pack = app_state.pack()
    plan = config.update
    names = list(config.sources) if plan.sources is None else plan.sources
    curate = config.curate

    def engine(budget: float | None, no_cache: bool) -> Engine:
        from livemed.cli.common import make_engine

        return make_engine(app_state, no_cache=no_cache, max_cost=budget)

    def chain(bound: Engine) -> Any:
        evidence = curate.evidence or pack.evidence_corpus()
        return _chain(app_state, bound, plan.curator, curate.retriever, evidence, None, None, pack)

    def bind(bound: Engine, model_id: str, stage: str) -> Any:
        extra = {} if stage == "grade" else {"pack": pack}  # as `rubrics`, `answer` and `grade` bind them
        return bind_model(model_id, bound, stage, _offline_kind(stage), config=app_state.config, **extra)

    end = _date(until, "--until", end_of_day=True) or datetime.now(UTC)
    cutoff = _date(config.cutoff.isoformat(), "cutoff") if config.cutoff else None
    return Tools(
        engine=engine,
        chain=chain,
        bind=bind,
        sources=[build_source(name, config) for name in names],
        prefilters=build_prefilters(config.prefilter, None, pack),
        until=end,
        cutoff=cutoff,
        pack=pack,
    )


def _offline_kind(stage: str) -> type:
    """The capability an offline baseline needs for `stage` (as `rubrics`, `answer` and `grade` ask)."""
    from livemed.answer.ask import OfflineAnswerer
    from livemed.grade.grader import OfflineGrader
    from livemed.rubrics.write import OfflineWriter

    kinds: dict[str, type] = {"rubrics": OfflineWriter, "answer": OfflineAnswerer, "grade": OfflineGrader}
    return kinds[stage]


def print_stage(stage: StageSummary) -> None:
    if stage.skipped:
        console.print(f"[dim]{stage.stage}: skipped — {escape(stage.skipped)}[/]")
        return
    new = ", ".join(f"{n} {what}" for what, n in stage.new.items()) or "nothing new"
    cost = f" · {stage.calls} call(s), ${stage.cost_usd:.4f}" if stage.usage else ""
    console.print(f"{stage.stage}: {new}{cost}", markup=False)
    if stage.error:
        err_console.print(f"[yellow]{stage.stage}:[/] {escape(stage.error)}", highlight=False)


def print_summary(summary: UpdateSummary, run: Run) -> None:
    table = Table(title=f"update {run.run_id} ({run.outcome})")
    for column in ("stage", "new", "calls", "cost $", "run"):
        table.add_column(column, justify="right" if column in ("calls", "cost $") else "left")
    for stage in summary.stages:
        new = (stage.skipped and f"skipped: {stage.skipped}") or ", ".join(
            f"{n} {k}" for k, n in stage.new.items()
        )
        table.add_row(
            stage.stage, escape(new or "-"), str(stage.calls), f"{stage.cost_usd:.4f}", stage.run_id or "-"
        )
    table.add_row("total", "", str(summary.calls), f"{summary.cost_usd:.4f}", run.run_id, style="bold")
    console.print(table)
