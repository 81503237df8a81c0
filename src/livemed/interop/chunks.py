"""An imported file read in chunks of lines, parsed in worker processes while this process writes.

`parsed_chunks(path, parse, max_bytes=…, workers=…, ready=…)` reads the file's lines
(`jsonl.read_lines`: a line over `max_bytes` comes as its size, never read whole), hands them on in
chunks of `CHUNK_LINES`, and yields `parse(chunk, skip(chunk))` for each chunk in file order. With
`workers` > 0 the chunks are parsed by that many forked processes (`parse` must be picklable, e.g. a
frozen dataclass) and at most `2 × workers + 1` chunks are in flight, so memory is bounded by the
chunk size, not by the file; with 0 (or where `fork` is not available) they are parsed here. Workers
ignore Ctrl-C: this process stops them.

`ready()` is called here once, before the first chunk is parsed; it returns `skip` (or None), run
here for each chunk, naming the lines `parse` need not parse (e.g. examples already stored). With
`overlap` (and workers), it is called once the first 2 × workers + 1 chunks are being parsed instead:
the caller's own start-up, such as opening its store (SQLAlchemy's import alone is ~0.3 s), then
runs while they parse, and those first chunks are parsed whole (for a caller that knows there is
nothing to skip, e.g. a store about to be created).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import closing, contextmanager
from itertools import islice
from pathlib import Path
from typing import TypeVar

from livemed.jsonl import read_lines

R = TypeVar("R")

CHUNK_LINES = 500
PARALLEL_FROM_BYTES = 1 << 20  # a smaller file is parsed here: starting a worker costs more than it saves
Lines = list[tuple[int, bytes | int]]  # (line number, raw line or the size of one over the limit)
Skip = Callable[[Lines], frozenset[int]]  # the numbers of a chunk's lines not to parse


MAX_WORKERS = 4


def default_workers(path: Path) -> int:
    """Workers for a file: one per core (at most `MAX_WORKERS`), none for a small file. Writing takes
    this process less time than parsing takes the workers, so it shares a core with one of them."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0  # reading it reports why
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MAX_WORKERS) if size >= PARALLEL_FROM_BYTES else 0


def parsed_chunks(
    path: Path,
    parse: Callable[[Lines, frozenset[int]], R],
    *,
    max_bytes: int | None,
    workers: int,
    ready: Callable[[], Skip | None] | None = None,
    overlap: bool = False,
) -> Iterator[R]:
    """`parse(chunk, skip(chunk))` of each chunk of the file's lines, in file order, `skip` being what
    `ready()` returned (see the module's text)."""
    with closing(read_lines(path, max_bytes)) as lines:  # the file is closed however the caller stops
        yield from _parsed(lines, parse, workers, ready, overlap)


def _parsed(
    lines: Iterator[tuple[int, bytes | int]],
    parse: Callable[[Lines, frozenset[int]], R],
    workers: int,
    ready: Callable[[], Skip | None] | None,
    overlap: bool,
) -> Iterator[R]:
    chunks = iter(lambda: list(islice(lines, CHUNK_LINES)), [])
    skip: Skip | None = None
    started = False

    def job(chunk: Lines) -> tuple[Lines, frozenset[int]]:
        return chunk, skip(chunk) if skip is not None else frozenset()

    def start() -> None:
        nonlocal skip, started
        if not started:
            started = True
            skip = ready() if ready is not None else None

    if not overlap or workers <= 0:
        start()
    if workers <= 0 or "fork" not in multiprocessing.get_all_start_methods():
        start()
        yield from (parse(*job(chunk)) for chunk in chunks)
        return
    with (
        _frozen_heap(),
        ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("fork"), initializer=_ignore_interrupts
        ) as pool,
    ):
        pending: deque[Future[R]] = deque()
        try:
            for chunk in chunks:
                pending.append(pool.submit(parse, *job(chunk)))
                if len(pending) > 2 * workers:
                    start()
                    yield pending.popleft().result()
            start()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """The heap that exists now (modules, schemas) frozen (`gc.freeze`) while the workers run: forked
    workers share its pages instead of copying them when a collection would scan them."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
