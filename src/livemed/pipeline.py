"""The stage runner: reads what a stage needs, skips what is done, writes results in batches.

A stage is a plain async function from one input record to the records it produces (outputs and
rejections). `run_stage` streams the inputs, drops those whose output already exists in the store,
runs the rest concurrently one batch at a time, and writes each batch in one transaction. A crash or
kill therefore loses at most the batch in flight, and the engine's response cache means even that
batch is not paid for twice (`livemed.runs.track_run` records each command as a `Run`). An item whose
outputs include a failed call (`records.is_failed_call`) is counted in `StageResult.call_failed`, with
its cause, so the command can fail with one line.
A caller that wants to watch a stage sets `item_progress` (a context variable) to a function that
receives the number of items finished or found already done so far; the CLI's progress bars use it.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import islice
from typing import Generic, TypeVar

from livemed.records import Record, Rejection, is_failed_call
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
    call_failed: int = 0  # items whose outputs include a failed call (not done; retried next run)
    causes: Counter[str] = field(default_factory=Counter)  # why those calls failed, by detail

    def merge(self, other: StageResult) -> None:
        self.seen += other.seen
        self.skipped += other.skipped
        self.processed += other.processed
        self.written.update(other.written)
        self.rejected.update(other.rejected)
        for reason, example in other.examples.items():
            self.examples.setdefault(reason, example)
        self.call_failed += other.call_failed
        self.causes.update(other.causes)

    def failure_line(self, unit: str) -> str | None:
        """`12 of 12 answers failed: <cause>; run again to retry them`, or None when no call failed."""
        if not self.call_failed:
            return None
        cause, _ = self.causes.most_common(1)[0] if self.causes else ("a model call failed", 0)
        others = len(self.causes) - 1
        more = f" (and {others} other cause{'s' if others > 1 else ''})" if others > 0 else ""
        return f"{self.call_failed} of {self.processed} {unit} failed: {cause}{more}; run again to retry them"


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
            window.report()
            for item in todo:
                await window.submit(item, work)
        await window.drain()
        window.report()
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
        self.report()
        if failure is not None:
            self._write()
            raise failure
        if len(self.finished) >= self.size:
            self._write()

    def report(self) -> None:
        """Tell the progress bar how many items are finished or were already done."""
        if (report := item_progress.get()) is not None:
            report(self.result.skipped + self.result.processed + len(self.finished))

    def _write(self) -> None:
        records = [record for _, produced in self.finished for record in produced]
        self.store.put(records)
        self.result.processed += len(self.finished)
        for _, produced in self.finished:
            failed = [record for record in produced if is_failed_call(record)]
            if failed:
                self.result.call_failed += 1
                self.result.causes[failure_cause(failed[0])] += 1
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


_NOT_SENT = re.compile(r" \(later calls to .* are not sent\)$")


def failure_cause(record: Record) -> str:
    """Why a failed call failed, in one short line (the same cause reads the same for every item)."""
    detail = str(getattr(record, "detail", "") or getattr(record, "reason", "") or "unknown")
    detail = _NOT_SENT.sub("", " ".join(detail.split()))
    return detail if len(detail) <= 240 else detail[:239] + "…"
