"""Run records: what each command did, its usage while it runs, its outcome, and who else is running.

```python
with track_run(store, "grade", models=[judge], engine=engine, lease=f"grade:{judge}") as run:
    result = asyncio.run(grade_all(...))
    settle(run, result, "criteria")           # counts; a failure line when calls failed
print_result(...)
raise_for_calls(run)                          # exit 1 with that one line, after the output
```

- `track_run` writes a `Run` when the command starts (with its pid and host), then a heartbeat thread
  rewrites it every `HEARTBEAT_S` seconds with the usage so far, so a run killed with `kill -9`
  keeps the usage flushed before it died. Such a run (its process gone from this host, or silent
  for longer than the lease timeout) is shown `interrupted` at once (`as_seen`: `store info`,
  `store runs`, the report, `export -k run`), and the next command on the store marks it so.
- With `lease=NAME` it also holds that lease (`store.leases`): a second live process asking for
  the same lease stops with one line before doing anything. On PostgreSQL only the `harvest` lease is
  taken: several workers share every other stage and partition its items by claims (`store.claims`,
  through `run_stage`).
- Outcomes: `ok`; `partial` (it finished, but some items ended as failed calls); `failed` (it raised,
  or every item it processed ended as a failed call, or the body set `run.error`); `interrupted`
  (Ctrl-C, a signal, or found dead later).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.errors import CallsFailedError
from livemed.pipeline.runner import RETRY
from livemed.records import Run, utcnow
from livemed.store import Store, leases

if TYPE_CHECKING:
    from livemed.pipeline.runner import StageResult

log = logging.getLogger("livemed.pipeline.runs")

HEARTBEAT_S = float(os.environ.get("LIVEMED_HEARTBEAT_S", leases.HEARTBEAT_S))
EXCLUSIVE_ON_POSTGRES = ("harvest",)  # leases still held alone on PostgreSQL (not partitioned by claims)
UNTRACKED_STALE_S = 6 * 3600.0  # a running Run from a livemed without heartbeats: dead after this long


@contextmanager
def track_run(
    store: Store,
    command: str,
    *,
    settings: dict[str, Any] | None = None,
    models: Sequence[str] = (),
    engine: Any = None,
    lease: str | Sequence[str] | None = None,
) -> Iterator[Run]:
    """Record a command as a `Run`: written when it starts, refreshed while it runs, finished at the end.

    The body may set `run.error` to record a failed run without raising (e.g. one source of several
    failed), or call `settle` with its stage result. `lease` may name several leases (`eval` holds
    one per candidate's answers and one for its grader): all are taken, or none.
    """
    run = Run(
        run_id=uuid.uuid4().hex[:12],
        command=command,
        settings=settings or {},
        models=list(models),
        pid=os.getpid(),
        host=leases.this_host(),
        heartbeat_at=utcnow(),
    )
    mark_dead_runs(store)
    holder = leases.Holder.here(run.run_id, command)
    names = [lease] if isinstance(lease, str) else list(lease or ())
    if store.dialect == "postgresql":  # workers share the stage: run_stage claims its items
        names = [name for name in names if name.startswith(EXCLUSIVE_ON_POSTGRES)]
    taken: list[str] = []
    try:
        for name in names:
            leases.acquire(store, name, holder)
            taken.append(name)
    except BaseException:
        for name in taken:
            leases.release(store, name, holder)
        raise
    store.put([run])
    beat = _Heartbeat(store, run, engine, names, holder)
    beat.start()
    try:
        yield run
    except KeyboardInterrupt:
        beat.stop()
        _finish(store, run, engine, "interrupted", "interrupted by the user")
        raise
    except SystemExit as exc:
        beat.stop()
        _finish(store, run, engine, "interrupted", f"stopped by a signal (exit code {exc.code})")
        raise
    except BaseException as exc:
        beat.stop()
        _finish(store, run, engine, "failed", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        beat.stop()
        for name in names:
            leases.release(store, name, holder)
    _finish(store, run, engine, _outcome(run), run.error)


def settle(run: Run, result: StageResult, unit: str) -> None:
    """Put a stage's counts on its Run; when items ended as failed calls, the one-line error too."""
    run.counts = {
        "seen": result.seen,
        "skipped": result.skipped,
        "processed": result.processed,
        "call_failed": result.call_failed,
        **dict(result.written),
    }
    if result.unusable:
        run.counts["unusable"] = sum(result.unusable.values())
    line = result.failure_line(unit)
    if line is not None:
        run.error = line


def settle_stages(run: Run, stages: Sequence[tuple[str, StageResult, str]]) -> None:
    """`settle` for a command that ran several stages (`eval`): `(name, result, unit)` each. The counts
    are the stages' sums plus each stage's own under `<name>: <count>`; the failure line names every
    stage whose items ended as failed calls."""
    run.counts = {}
    for name, result, _ in stages:
        for key, value in (("seen", result.seen), ("processed", result.processed)):
            run.counts[key] = run.counts.get(key, 0) + value
        run.counts["call_failed"] = run.counts.get("call_failed", 0) + result.call_failed
        run.counts.update({f"{name}: {k}": v for k, v in result.written.items()})
        run.counts[f"{name}: call_failed"] = result.call_failed
        if result.unusable:
            run.counts["unusable"] = run.counts.get("unusable", 0) + sum(result.unusable.values())
    parts = [line for _, result, unit in stages if (line := result.failure_line(unit))]
    if parts:
        retry = any(p.endswith(RETRY) for p in parts)
        run.error = "; ".join(p.removesuffix(RETRY) for p in parts) + (RETRY if retry else "")


def raise_for_calls(run: Run) -> None:
    """Exit 1 (after the command's output) with the failure line when some items' calls failed or a
    grader's verdicts were unusable (a grader that did not grade has not graded)."""
    if run.counts.get("call_failed") or run.counts.get("unusable"):
        raise CallsFailedError(run.error or f"{run.counts['call_failed']} call(s) failed")


def _outcome(run: Run) -> str:
    failed, processed = run.counts.get("call_failed", 0), run.counts.get("processed", 0)
    unusable = run.counts.get("unusable", 0)
    graded = sum(n for key, n in run.counts.items() if key == "grade" or key.endswith(": grade"))
    if (failed and failed < processed) or (unusable and graded):
        return "partial"
    return "failed" if run.error else "ok"


class _Outcome(TypedDict):
    outcome: str


_OUTCOME = TypeAdapter(_Outcome)


def mark_dead_runs(store: Store) -> list[Run]:
    """Mark every `running` Run whose process is gone as `interrupted` (its flushed usage is kept)."""
    dead = [marked for run in running_runs(store) if (marked := _found_dead(run)) is not None]
    if dead:
        store.put(dead)
        log.warning("marked %d run(s) whose process is gone as interrupted", len(dead))
    return dead


def running_runs(store: Store) -> list[Run]:
    """The Runs stored as `running` (only the outcome of the others is read)."""
    running = [i for i, r in store.fields(Run.kind, _OUTCOME) if r["outcome"] == "running"]
    return [run for run in store.get_many(Run, running).values() if run.outcome == "running"]


def as_seen(run: Run) -> Run:
    """The Run as it stands now: a `running` one whose process is gone (dead on this host, or silent
    for longer than the lease timeout) is `interrupted`, as the next command on the store records it."""
    return _found_dead(run) or run


def outcomes(store: Store) -> Counter[str]:
    """How many Runs ended each way, a dead `running` one counted `interrupted` (`as_seen`)."""
    counts = Counter(r["outcome"] for _, r in store.fields(Run.kind, _OUTCOME))
    for run in running_runs(store):
        if as_seen(run).outcome != "running":
            counts["running"] -= 1
            counts["interrupted"] += 1
    return +counts


def _found_dead(run: Run) -> Run | None:
    """`run` marked `interrupted` when it is `running` and its process is gone; else None."""
    if run.outcome != "running":
        return None
    last_seen = run.heartbeat_at or run.started_at
    stale_after = leases.STALE_AFTER_S if run.heartbeat_at else UNTRACKED_STALE_S
    if not leases.gone(run.pid, run.host, last_seen, stale_after_s=stale_after):
        return None
    who = f"process {run.pid} on {run.host}" if run.pid else "its process"
    error = f"found dead: {who} ended without finishing (killed?); usage as last flushed"
    return run.model_copy(update={"outcome": "interrupted", "error": error, "ended_at": last_seen})


def _finish(store: Store, run: Run, engine: Any, outcome: str, error: str | None) -> None:
    _take_usage(run, engine)
    run.outcome = outcome  # type: ignore[assignment]
    run.error = error
    run.ended_at = utcnow()
    store.put([run])


def _take_usage(run: Run, engine: Any) -> None:
    if engine is None:
        return
    run.usage = dict(engine.accounting.by_model)
    run.stage_usage = {stage: dict(models) for stage, models in engine.accounting.by_stage.items()}
    run.compliance = {
        model: {"first_try": c.first_try, "repaired": c.repaired, "failed": c.failed, "total": c.total}
        for model in list(engine.compliance)
        if (c := engine.compliance_of(model)).total
    }


class _Heartbeat(threading.Thread):
    """Every HEARTBEAT_S seconds: the Run with its usage so far, and the lease's heartbeat."""

    def __init__(self, store: Store, run: Run, engine: Any, names: list[str], holder: leases.Holder) -> None:
        super().__init__(name=f"livemed-heartbeat-{run.run_id}", daemon=True)
        self.store, self.record, self.engine, self.names, self.holder = store, run, engine, names, holder
        self._stopped = threading.Event()

    def run(self) -> None:  # the thread's body (threading.Thread API)
        while not self._stopped.wait(HEARTBEAT_S):
            try:
                self._beat()
            except Exception as exc:  # a busy store must not kill the command: try again next beat
                log.debug("heartbeat of run %s failed: %s", self.record.run_id, exc)

    def _beat(self) -> None:
        snapshot = self.record.model_copy(deep=True)
        with contextlib.suppress(RuntimeError):  # a dict changed size while copied: the next beat gets it
            _take_usage(snapshot, self.engine)
        snapshot.heartbeat_at = utcnow()
        if self._stopped.is_set():
            return
        self.store.put([snapshot])
        holder = self.holder
        for name in self.names:
            self.holder = leases.refresh(self.store, name, holder)

    def stop(self) -> None:
        if self.is_alive():
            self._stopped.set()
            self.join(timeout=leases.STALE_AFTER_S)


__all__ = [
    "HEARTBEAT_S",
    "as_seen",
    "mark_dead_runs",
    "outcomes",
    "raise_for_calls",
    "running_runs",
    "settle",
    "settle_stages",
    "track_run",
]
