"""The stage runner: reads what a stage needs, skips what is done, writes results in batches.

A stage is a plain async function from one input record to the records it produces (outputs and
rejections). `run_stage` streams the inputs, drops those whose output already exists in the store,
runs the rest concurrently one batch at a time, and writes each batch in one transaction. A crash or
kill therefore loses at most the batch in flight, and the engine's response cache means even that
batch is not paid for twice. `track_run` records each command as a `Run` with its usage and outcome.
A caller that wants to watch a stage sets `item_progress` (a context variable) to a function that
receives the number of items finished so far; the CLI's progress bars use it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, TypeVar

from livemed.records import Record, Rejection, Run, utcnow
from livemed.store import Store

T = TypeVar("T")

item_progress: ContextVar[Callable[[int], None] | None] = ContextVar("item_progress", default=None)
"""Called with the number of items finished so far by the running stage (None: nobody watches)."""


@dataclass
class StageResult:
    """What one stage run did."""

    seen: int = 0
    skipped: int = 0
    processed: int = 0
    written: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # reason -> "record id: detail" of the first one

    def merge(self, other: StageResult) -> None:
        self.seen += other.seen
        self.skipped += other.skipped
        self.processed += other.processed
        self.written.update(other.written)
        self.rejected.update(other.rejected)
        for reason, example in other.examples.items():
            self.examples.setdefault(reason, example)


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


async def run_stage(
    store: Store,
    items: Iterable[T],
    work: Callable[[T], Awaitable[Sequence[Record]]],
    *,
    output_id: Callable[[T], str | Sequence[str]],
    output_kinds: Sequence[str],
    batch_size: int = 64,
    redo: bool = False,
    on_item: Callable[[T, Sequence[Record]], None] | None = None,
) -> StageResult:
    """Run `work` on every item whose output (`output_id` under any of `output_kinds`) is not stored yet.

    `output_id` may return several ids (e.g. a case id and the ids of rejections by different stages):
    an item is done when any of them is stored. Up to `batch_size` items are in flight at once, as a
    sliding window (a slow item never holds the others back), and finished items are written every
    `batch_size` results in one transaction. If an item raises, what finished before is written first.
    """
    result = StageResult()
    window = _Window(store, result, on_item, batch_size)
    try:
        for batch in batched(items, batch_size):
            result.seen += len(batch)
            todo = batch if redo else _not_done(store, batch, output_id, output_kinds)
            result.skipped += len(batch) - len(todo)
            for item in todo:
                await window.submit(item, work)
        await window.drain()
    finally:
        await window.cancel()
    return result


class _Window(Generic[T]):
    """At most `size` items in flight; finished ones are written in batches of `size`."""

    def __init__(
        self,
        store: Store,
        result: StageResult,
        on_item: Callable[[T, Sequence[Record]], None] | None,
        size: int,
    ) -> None:
        self.store, self.result, self.on_item, self.size = store, result, on_item, size
        self.running: dict[asyncio.Future[Sequence[Record]], T] = {}
        self.finished: list[tuple[T, Sequence[Record]]] = []

    async def submit(self, item: T, work: Callable[[T], Awaitable[Sequence[Record]]]) -> None:
        while len(self.running) >= self.size:
            await self._collect()
        self.running[asyncio.ensure_future(work(item))] = item

    async def drain(self) -> None:
        while self.running:
            await self._collect()
        self._write()

    async def _collect(self) -> None:
        done, _ = await asyncio.wait(self.running, return_when=asyncio.FIRST_COMPLETED)
        failure: BaseException | None = None
        for future in done:
            item = self.running.pop(future)
            if future.exception() is not None:
                failure = failure or future.exception()
            else:
                self.finished.append((item, future.result()))
        if (report := item_progress.get()) is not None:
            report(self.result.processed + len(self.finished))
        if failure is not None:
            self._write()
            raise failure
        if len(self.finished) >= self.size:
            self._write()

    def _write(self) -> None:
        records = [record for _, produced in self.finished for record in produced]
        self.store.put(records)
        self.result.processed += len(self.finished)
        for record in records:
            self.result.written[record.kind] += 1
            if isinstance(record, Rejection):
                self.result.rejected[record.reason] += 1
                self.result.examples.setdefault(record.reason, f"{record.record_id}: {record.detail}")
        if self.on_item is not None:
            for item, produced in self.finished:
                self.on_item(item, produced)
        self.finished = []

    async def cancel(self) -> None:
        """Cancel what is still in flight and wait until it has stopped (no task outlives the run)."""
        for future in self.running:
            future.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)
        self.running.clear()


def _not_done(
    store: Store,
    batch: list[T],
    output_id: Callable[[T], str | Sequence[str]],
    output_kinds: Sequence[str],
) -> list[T]:
    ids = [_as_list(output_id(item)) for item in batch]
    flat = [one for item_ids in ids for one in item_ids]
    done: set[str] = set()
    for kind in output_kinds:
        done |= store.has(kind, flat)
    return [item for item, item_ids in zip(batch, ids, strict=True) if done.isdisjoint(item_ids)]


def _as_list(ids: str | Sequence[str]) -> list[str]:
    return [ids] if isinstance(ids, str) else list(ids)


@contextmanager
def track_run(
    store: Store,
    command: str,
    *,
    settings: dict[str, Any] | None = None,
    models: Sequence[str] = (),
    engine: Any = None,
) -> Iterator[Run]:
    """Record a command as a `Run`: written when it starts, updated with usage and outcome when it ends.

    The body may set `run.error` to record a failed run without raising (e.g. one source of several
    failed): the outcome is then "failed" with that error.
    """
    run = Run(run_id=uuid.uuid4().hex[:12], command=command, settings=settings or {}, models=list(models))
    store.put([run])
    try:
        yield run
    except KeyboardInterrupt:
        _finish(store, run, engine, "interrupted", "interrupted by the user")
        raise
    except BaseException as exc:
        _finish(store, run, engine, "failed", f"{type(exc).__name__}: {exc}")
        raise
    _finish(store, run, engine, "failed" if run.error else "ok", run.error)


def _finish(store: Store, run: Run, engine: Any, outcome: str, error: str | None) -> None:
    if engine is not None:
        run.usage = dict(engine.accounting.by_model)
        run.stage_usage = {stage: dict(models) for stage, models in engine.accounting.by_stage.items()}
        run.compliance = {
            model: {"first_try": c.first_try, "repaired": c.repaired, "failed": c.failed, "total": c.total}
            for model in engine.compliance
            if (c := engine.compliance_of(model)).total
        }
    run.outcome = outcome  # type: ignore[assignment]
    run.error = error
    run.ended_at = utcnow()
    store.put([run])
