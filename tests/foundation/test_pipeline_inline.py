"""`run_stage(options=RunOptions(inline=True))`: work that never waits (offline models) runs in place,
with the same results, batched writes, skips and crash rules as the windowed path."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from livemed.pipeline.runner import RunOptions, item_progress, run_now, run_stage
from livemed.records import Doc, Record
from livemed.store import Store
from tests.foundation.factories import doc


async def _loud(d: Doc) -> Sequence[Record]:
    if d.source_id == "7":
        raise RuntimeError("boom")
    return [d.model_copy(update={"source": "loud", "text": d.text.upper()})]


def _out(d: Doc) -> str:
    return f"loud:{d.source_id}"


async def test_inline_writes_what_the_window_writes_and_skips_on_rerun(sqlite_store: Store) -> None:
    docs = [doc(str(i)) for i in range(20) if i != 7]
    seen: list[int] = []
    token = item_progress.set(seen.append)
    try:
        first = await run_stage(
            sqlite_store,
            docs,
            _loud,
            output_id=_out,
            output_kinds=["doc"],
            batch_size=4,
            options=RunOptions(inline=True),
        )
    finally:
        item_progress.reset(token)
    assert (first.processed, first.written) == (19, {"doc": 19})
    assert seen[-1] == 19
    assert sqlite_store.has("doc", [_out(d) for d in docs]) == {_out(d) for d in docs}
    again = await run_stage(
        sqlite_store, docs, _loud, output_id=_out, output_kinds=["doc"], options=RunOptions(inline=True)
    )
    assert (again.processed, again.skipped) == (0, 19)


async def test_an_inline_crash_keeps_what_finished_before_it(sqlite_store: Store) -> None:
    docs = [doc(str(i)) for i in range(10)]
    with pytest.raises(RuntimeError, match="boom"):
        await run_stage(
            sqlite_store,
            docs,
            _loud,
            output_id=_out,
            output_kinds=["doc"],
            batch_size=3,
            options=RunOptions(inline=True),
        )
    stored = sqlite_store.has("doc", [_out(d) for d in docs])
    assert stored == {f"loud:{i}" for i in range(7)}  # 0–6 finished before 7 raised; 8 and 9 never ran


def test_run_now_returns_a_result_and_refuses_work_that_waits() -> None:
    async def ready() -> int:
        return 42

    async def waits() -> int:
        await asyncio.sleep(0)
        return 1

    assert run_now(ready()) == 42
    with pytest.raises(RuntimeError, match="waited"):
        run_now(waits())
