"""The stage runner: reads what a stage needs, skips what is done, writes results in batches.

A stage is a plain async function from one input record to the records it produces (outputs and
rejections). `run_stage` streams the inputs (a list, a generator, or a `Feed` another stage fills
while it runs), drops those whose output already exists in the store, keeps up to `window` items in
flight, and writes finished items in batches, one transaction each. A crash or kill therefore loses
at most the items not yet written, and the engine's response cache means even those are not paid
for twice (`livemed.pipeline.runs.track_run` records each command as a `Run`). An item whose
outputs include a failed call (`records.is_failed_call`) is counted in `StageResult.call_failed`, with
its cause, so the command can fail with one line.
A caller that wants to watch a stage sets `item_progress` (a context variable) to a function that
receives the number of items finished or found already done so far; the CLI's progress bars use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from livemed.records import Record, Rejection, is_failed_call, is_unusable_verdict

if TYPE_CHECKING:
    from livemed.store import Store
    from livemed.store.claims import Claims

T = TypeVar("T")
U = TypeVar("U")

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
    elsewhere: int = 0  # of `skipped`: items another worker on the store did while this one ran
    unusable: Counter[str] = field(default_factory=Counter)  # verdicts given but unusable, by reason
    retry: str = "grade them again with --retry-failures"  # how (the grading job names its command)

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
        self.elsewhere += other.elsewhere
        self.unusable.update(other.unusable)
        if other.unusable:
            self.retry = other.retry

    def failure_line(self, unit: str) -> str | None:
        """`12 of 12 answers failed: <cause>; run again to retry them`, and/or `40 of 40 verdicts
        unusable (...)`; None when no call failed and every verdict was usable."""
        parts = []
        if self.unusable:
            parts.append(self.unusable_line())
        if not self.call_failed:
            return parts[0] if parts else None
        cause, _ = self.causes.most_common(1)[0] if self.causes else ("a model call failed", 0)
        others = len(self.causes) - 1
        more = f" (and {others} other cause{'s' if others > 1 else ''})" if others > 0 else ""
        parts.insert(0, f"{self.call_failed} of {self.processed} {unit} failed: {cause}{more}")
        return "; ".join(parts) + RETRY

    def unusable_line(self) -> str:
        """`40 of 40 verdicts unusable (unparsable 40): their answers are not graded (...)`."""
        n = sum(self.unusable.values())
        verdicts = self.written.get("grade", 0) + n
        why = ", ".join(f"{reason} {count}" for reason, count in self.unusable.most_common())
        return f"{n} of {verdicts} verdicts unusable ({why}): their answers are not graded; {self.retry}"


RETRY = "; run again to retry them"  # the end of a line of failed calls


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class Feed(Generic[T]):
    """Items that one stage hands to another while both run: `put` them, then `close()`.

    `run_stage` takes a Feed as its items and starts each item as soon as it is put (no barrier between
    the stage that feeds and the stage that reads)."""

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self.closed = False
        self.ready = asyncio.Event()
        self._listeners: list[tuple[Callable[[list[T]], None], Callable[[], None] | None]] = []

    def put(self, items: Iterable[T]) -> None:
        if self._listeners:
            batch = list(items)
            for on_put, _ in self._listeners:
                on_put(batch)
            return
        self._items.extend(items)
        if self._items:
            self.ready.set()

    def close(self) -> None:
        self.closed = True
        self.ready.set()
        for _, on_close in self._listeners:
            if on_close is not None:
                on_close()

    def listen(self, on_put: Callable[[list[T]], None], on_close: Callable[[], None] | None = None) -> None:
        """Hand every item put from now on to `on_put` instead of keeping it (the items waiting go to the
        first listener); a Feed with listeners is read through them, in the order they were added."""
        self._listeners.append((on_put, on_close))
        if waiting := self.take(len(self._items)):
            on_put(waiting)
        if self.closed and on_close is not None:
            on_close()

    def expand(self, each: Callable[[T], Iterable[U]]) -> Feed[U]:
        """A Feed of `each(item)` for every item of this one, closed when this one closes (one stage's
        items made from another's: a case → its samples)."""
        out: Feed[U] = Feed()
        self.listen(lambda items: out.put([part for item in items for part in each(item)]), out.close)
        return out

    def take(self, size: int) -> list[T]:
        """Up to `size` of the items put so far (without waiting)."""
        taken = [self._items.popleft() for _ in range(min(size, len(self._items)))]
        if not self._items and not self.closed:
            self.ready.clear()
        return taken


WRITE_EVERY_S = 0.25  # finished items are also written when the last write is older than this


@dataclass(frozen=True)
class RunOptions:
    """How `run_stage` treats its items (each default off).

    `redo`: run every item, done or not (its outputs replace the stored ones).

    `inline`: `work` never waits (an offline model: no I/O), so each item is run to its end in place
    (`run_now`) instead of as a task: no window, no event-loop round trip per item; results are
    written `batch_size` at a time as usual. A coroutine that does wait is an error, not a hang.

    `checked`: the items were looked up in the store just before they are given (grading's
    `GradeJob.items` filters each chunk by `done_ids`' rule), so the first look is skipped; on
    PostgreSQL the look after claiming still runs (another worker may have done an item meanwhile).
    """

    redo: bool = False
    inline: bool = False
    checked: bool = False


DEFAULT_OPTIONS = RunOptions()


async def run_stage(
    store: Store,
    items: Iterable[T] | Feed[T],
    work: Callable[[T], Awaitable[Sequence[Record]]],
    *,
    output_id: Callable[[T], str | Sequence[str]],
    output_kinds: Sequence[str],
    batch_size: int = 64,
    window: int | None = None,
    options: RunOptions = DEFAULT_OPTIONS,
    on_item: Callable[[T, Sequence[Record]], None] | None = None,
    on_batch: Callable[[list[tuple[T, Sequence[Record]]]], None] | None = None,
    claim_scope: str | None = None,
    done_ids: Callable[[list[str]], set[str]] | None = None,
) -> StageResult:
    """Run `work` on every item whose output (`output_id` under any of `output_kinds`) is not stored yet.

    `done_ids` (given a list of output ids, those that count as done) replaces the `output_kinds` test
    where "done" is more than "stored" (grading: an unusable verdict is done, a failed call is not) when
    a claiming worker looks again at items another worker may have finished.

    `options` (`RunOptions`): `redo` every item, run offline work `inline`, items already `checked`.

    `output_id` may return several ids (e.g. a case id and the ids of rejections by different stages):
    an item is done when any of them is stored. Up to `window` items (default `batch_size`) are in
    flight at once, as a sliding window (a slow item never holds the others back); finished items are
    written every `batch_size` results (or `WRITE_EVERY_S`) in one transaction, then `on_item` is told
    of each and `on_batch` of all of them. If an item raises, what finished before is written first.
    `items` may be a `Feed` another stage fills while this one runs.

    On PostgreSQL several workers may run the same stage on one store: each batch of pending items is
    claimed first (`store.claims`, scope `claim_scope`, default the first output kind, keyed by the
    item's first output id), an item another worker holds is left to it and looked at again at the
    end (done by then, or re-claimed when that worker is gone), and claims are given back once the
    outputs are written (a key several items share, e.g. an answer's criteria, once the last of this
    worker's items under it is written). On SQLite the stage lease keeps one process, and nothing is claimed.
    """
    result = StageResult()
    running = _Window(store, result, on_item, on_batch, batch_size, window or batch_size)
    running.inline = options.inline
    redo = options.redo
    scope = claim_scope or (output_kinds[0] if output_kinds else None)
    claimer = _Claimer.open(store, scope, result, output_id, output_kinds, redo, done_ids)
    running.claimer = claimer

    async def submit(batch: list[T]) -> None:
        result.seen += len(batch)
        todo = batch if redo or options.checked else _not_done(store, batch, output_id, output_kinds)
        result.skipped += len(batch) - len(todo)
        if claimer is not None:
            todo = claimer.claim(todo)
        running.progress()
        for item in todo:
            await running.submit(item, work)

    try:
        if isinstance(items, Feed):
            while batch := await running.next_from(items, batch_size):
                await submit(batch)
        else:
            for batch in batched(items, batch_size):
                await submit(batch)
        if claimer is not None:
            await claimer.finish(running, work)
        await running.drain()
        running.progress()
    finally:
        await running.cancel()
        if claimer is not None:
            claimer.close()
    return result


class _Claimer(Generic[T]):
    """`run_stage`'s claims on a PostgreSQL store: which items this worker runs, which it leaves."""

    def __init__(
        self,
        claims: Claims,
        result: StageResult,
        output_id: Callable[[T], str | Sequence[str]],
        output_kinds: Sequence[str],
        redo: bool,
        done_ids: Callable[[list[str]], set[str]] | None = None,
    ) -> None:
        self.claims, self.result, self.output_id, self.output_kinds = claims, result, output_id, output_kinds
        self.redo, self.done_ids = redo, done_ids
        self.deferred: list[T] = []  # pending items another worker held when this one looked
        self.held: Counter[str] = Counter()  # this worker's items in flight, by claim key
        self.poll_s = min(1.0, claims.ttl_s / 10)
        self._beating = claims.beating()
        self._beating.__enter__()

    @classmethod
    def open(
        cls,
        store: Store,
        scope: str | None,
        result: StageResult,
        output_id: Callable[[T], str | Sequence[str]],
        output_kinds: Sequence[str],
        redo: bool,
        done_ids: Callable[[list[str]], set[str]] | None = None,
    ) -> _Claimer[T] | None:
        if scope is None or store.dialect != "postgresql":
            return None
        from livemed.store.claims import Claims

        return cls(Claims(store, scope), result, output_id, output_kinds, redo, done_ids)

    def key(self, item: T) -> str:
        return _as_list(self.output_id(item))[0]

    def claim(self, todo: list[T]) -> list[T]:
        """The items of `todo` this worker now holds and that are still not done; the rest wait.

        Several items may share a key (per-criterion grading: an answer's criteria): a key this worker
        holds for items in flight is its own without asking the store, and `held` counts its items in
        flight, so the claim is given back when the last of them is written (or found done)."""
        keys = [self.key(item) for item in todo]  # each item's key made once (a grade id: a hash)
        asked = [key for key in dict.fromkeys(keys) if not self.held[key]]
        mine = self.claims.take(asked) | {key for key in keys if self.held[key]}
        self.deferred.extend(item for item, key in zip(todo, keys, strict=True) if key not in mine)
        ours = [(item, key) for item, key in zip(todo, keys, strict=True) if key in mine]
        self.held.update(key for _, key in ours)
        if self.redo or not ours:
            return [item for item, _ in ours]
        still = _not_done(
            self.claims.store, [item for item, _ in ours], self.output_id, self.output_kinds, self.done_ids
        )
        left = {id(item) for item in still}  # `_not_done` keeps the item objects it was given
        done = [key for item, key in ours if id(item) not in left]
        if done:
            self._give_back(done)
            self.result.skipped += len(done)
            self.result.elsewhere += len(done)
        return still

    def _give_back(self, keys: list[str]) -> None:
        """One item of each of `keys` is written or done: give back the keys left with none in flight."""
        self.held.subtract(keys)
        free = [key for key in dict.fromkeys(keys) if self.held[key] <= 0]
        for key in free:
            del self.held[key]
        if free:
            self.claims.release(free)

    def retry(self) -> list[T]:
        """The deferred items to run now: not done, and free (given back, or their holder is gone)."""
        deferred, self.deferred = self.deferred, []
        if self.redo:  # a given-back claim means its holder did the item
            held = self.claims.held_elsewhere([self.key(item) for item in deferred])
            pending = [item for item in deferred if self.key(item) in held]
        else:
            pending = _not_done(self.claims.store, deferred, self.output_id, self.output_kinds, self.done_ids)
        self.result.skipped += len(deferred) - len(pending)
        self.result.elsewhere += len(deferred) - len(pending)
        return self.claim(pending)

    async def finish(self, running: _Window[T], work: Callable[[T], Awaitable[Sequence[Record]]]) -> None:
        """Until no deferred item is left: drop those done elsewhere, run those whose claim is free."""
        while self.deferred:
            for item in self.retry():
                await running.submit(item, work)
            if self.deferred:
                await running.pause(self.poll_s)

    def written(self, items: Sequence[T]) -> None:
        self._give_back([self.key(item) for item in items])

    def close(self) -> None:
        self._beating.__exit__(None, None, None)


# The first items of a stage each get an event-loop turn once started: a call needs a few turns to reach
# the socket, so the first go out while the rest of the window is made instead of after all of it (with
# 256-512 in flight, 0.3-0.6 s sooner). Only the first: a turn per item throughout batched fewer cache reads
# and writes per turn and cost `eval` a quarter of its rate at 100 ms (docs/benchmarks.md, eval_throughput).
FIRST_TURNS = 16


class _Window(Generic[T]):
    """At most `limit` items in flight; finished ones are written in batches of `size`.

    Each finished task reports through a done callback (no wait over every task in flight per result);
    the coroutine that waits for a free slot, for the feed or for the end writes and raises."""

    def __init__(
        self,
        store: Store,
        result: StageResult,
        on_item: Callable[[T, Sequence[Record]], None] | None,
        on_batch: Callable[[list[tuple[T, Sequence[Record]]]], None] | None,
        size: int,
        limit: int,
    ) -> None:
        self.store, self.result, self.on_item, self.on_batch = store, result, on_item, on_batch
        self.size, self.limit = size, max(1, limit)
        self.running: dict[asyncio.Future[Sequence[Record]], T] = {}
        self.finished: list[tuple[T, Sequence[Record]]] = []
        self.failure: BaseException | None = None
        self.changed = asyncio.Event()
        self.report = item_progress.get()
        self.last_write = time.monotonic()
        self.claimer: _Claimer[T] | None = None
        self.inline = False
        self.starting = min(self.limit, FIRST_TURNS)

    def progress(self) -> None:
        """Tell the progress bar how many items are finished or were already done."""
        if self.report is not None:
            self.report(self.result.skipped + self.result.processed + len(self.finished))

    async def submit(self, item: T, work: Callable[[T], Awaitable[Sequence[Record]]]) -> None:
        if self.inline:
            try:
                self.finished.append((item, run_now(work(item))))
            except BaseException as exc:
                self.failure = exc
            if self.failure is not None or len(self.finished) >= self.size:
                self._settle()
                self.progress()
            return
        while len(self.running) >= self.limit:
            await self._wait()
        future = asyncio.ensure_future(work(item))
        self.running[future] = item
        future.add_done_callback(self._done)
        if self.starting:  # each of the first items gets a turn: its call goes out before the rest are made
            self.starting -= 1
            await asyncio.sleep(0)
            self._settle()  # what finished during the turn: written when due; an item's exception raised

    async def next_from(self, feed: Feed[T], size: int) -> list[T]:
        """The next items of `feed` (empty once it is closed and empty), writing what finishes meanwhile."""
        while not (batch := feed.take(size)) and not feed.closed:
            self.changed.clear()
            waiters = [asyncio.ensure_future(feed.ready.wait()), asyncio.ensure_future(self.changed.wait())]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            self._settle()
        return batch

    async def pause(self, seconds: float) -> None:
        """Wait `seconds` (or until an item finishes), writing what is due."""
        self.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), seconds)
        self._settle()

    async def drain(self) -> None:
        while self.running:
            await self._wait()
        self._settle()
        self._write()

    def _done(self, future: asyncio.Future[Sequence[Record]]) -> None:
        item = self.running.pop(future, None)
        if item is None or future.cancelled():
            return
        if future.exception() is not None:
            self.failure = self.failure or future.exception()
        else:
            self.finished.append((item, future.result()))
        self.progress()
        self.changed.set()

    async def _wait(self) -> None:
        self.changed.clear()
        await self.changed.wait()
        self._settle()

    def _settle(self) -> None:
        """Write what is due; raise an item's exception (after writing what finished before it)."""
        if self.failure is not None:
            self._write()
            raise self.failure
        due = len(self.finished) >= self.size or not self.running
        if self.finished and (due or time.monotonic() - self.last_write >= WRITE_EVERY_S):
            self._write()

    def _write(self) -> None:
        """Write what finished, `size` items a transaction (more may finish in one turn than that)."""
        finished, self.finished = self.finished, []
        self.last_write = time.monotonic()
        for start in range(0, len(finished), self.size):
            self._write_batch(finished[start : start + self.size])

    def _write_batch(self, finished: list[tuple[T, Sequence[Record]]]) -> None:
        records = [record for _, produced in finished for record in produced]
        self.store.put(records)
        if self.claimer is not None and finished:
            self.claimer.written([item for item, _ in finished])
        self.result.processed += len(finished)
        for _, produced in finished:
            self._count_failures(produced)
        for record in records:
            self.result.written[record.kind] += 1
            if isinstance(record, Rejection):
                self.result.rejected[record.reason] += 1
                self.result.examples.setdefault(record.reason, f"{record.record_id}: {record.detail}")
        if self.on_item is not None:
            for item, produced in finished:
                self.on_item(item, produced)
        if self.on_batch is not None and finished:
            self.on_batch(finished)

    def _count_failures(self, produced: Sequence[Record]) -> None:
        """An item whose outputs include a failed call is counted once (with its cause); each unusable
        verdict is counted by its reason."""
        failed = [record for record in produced if is_failed_call(record)]
        if failed:
            self.result.call_failed += 1
            self.result.causes[failure_cause(failed[0])] += 1
        for record in produced:
            if is_unusable_verdict(record):
                self.result.unusable[record.reason] += 1

    async def cancel(self) -> None:
        """Cancel what is still in flight and wait until it has stopped (no task outlives the run)."""
        for future in self.running:
            future.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)
        self.running.clear()


def raise_first(done: Iterable[asyncio.Future[Any]]) -> None:
    """Raise the error of the first task of `done` that failed (CancelledError for a cancelled one),
    after reading every one's: asyncio prints an error nobody read as "Task exception was never
    retrieved" (two stages stopped by one --max-cost)."""
    errors = [asyncio.CancelledError() if task.cancelled() else task.exception() for task in done]
    for error in errors:
        if error is not None:
            raise error


def run_now(work: Awaitable[U]) -> U:
    """The result of a coroutine that never waits, run to its end without an event loop."""
    coroutine = work.__await__()
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("inline stage work waited for I/O; run it without RunOptions(inline=True)")


def _not_done(
    store: Store,
    batch: list[T],
    output_id: Callable[[T], str | Sequence[str]],
    output_kinds: Sequence[str],
    done_ids: Callable[[list[str]], set[str]] | None = None,
) -> list[T]:
    ids = [_as_list(output_id(item)) for item in batch]
    flat = list(dict.fromkeys(one for item_ids in ids for one in item_ids))  # items may share a claim key
    done: set[str] = set() if done_ids is None else done_ids(flat)
    for kind in output_kinds if done_ids is None else ():
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
