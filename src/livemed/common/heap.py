"""The garbage collector while livemed works: fewer collections, and none that scan the heap it started with.

A run that makes records by the 100,000 (grading, scoring, the leaderboard's bootstrap) keeps most of
what it makes (scores, plans, modules, schemas), and CPython's collector, run every 700 young
allocations and scanning every survivor again and again, took a fifth to a quarter of its CPU
(docs/benchmarks.md). `fewer_collections` freezes the heap that exists when a block starts
(`gc.freeze`: no collection scans it) and collects the youngest generation every `GC_YOUNG`
allocations; reference counting still frees everything that is not in a cycle at once.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
U = TypeVar("U")

GC_YOUNG = 10_000  # allocations between collections of the youngest generation
_DEPTH = [0]  # how many `fewer_collections` blocks are under way


@contextmanager
def fewer_collections() -> Iterator[None]:
    """While the block runs, the heap that exists when it starts is frozen and the youngest generation is
    collected every `GC_YOUNG` allocations instead of 700. A nested block (a stage inside the `livemed`
    program, eval's answer stages inside eval) freezes what exists when it starts too (its plan); the
    outermost block restores the thresholds and unfreezes when it ends."""
    outermost = _DEPTH[0] == 0
    thresholds = gc.get_threshold()
    gc.freeze()
    if outermost:
        gc.set_threshold(max(GC_YOUNG, thresholds[0]), *thresholds[1:])
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if outermost:
            gc.set_threshold(*thresholds)
            gc.unfreeze()


def frozen_heap(run: Callable[P, Coroutine[Any, Any, U]]) -> Callable[P, Coroutine[Any, Any, U]]:
    """An async stage run inside `fewer_collections`."""

    @functools.wraps(run)
    async def frozen(*args: P.args, **kwargs: P.kwargs) -> U:
        with fewer_collections():
            return await run(*args, **kwargs)

    return frozen
