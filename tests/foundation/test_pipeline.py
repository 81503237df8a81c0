from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from livemed.pipeline.runner import FIRST_TURNS, run_stage
from livemed.pipeline.runs import track_run
from livemed.records import Doc, Record, Rejection, Run
from livemed.store import Store
from tests.foundation.factories import doc


async def _shout(d: Doc) -> Sequence[Record]:
    if "reject" in d.source_id:
        return [Rejection(stage="shout", reason="asked_to", record_kind="doc", record_id=d.id)]
    return [d.model_copy(update={"source": "loud", "text": d.text.upper()})]


async def test_run_stage_skips_finished_items_on_rerun(sqlite_store: Store) -> None:
    docs = [doc(str(i)) for i in range(10)] + [doc("reject-me")]
    calls: list[str] = []

    async def work(d: Doc) -> Sequence[Record]:
        calls.append(d.source_id)
        return await _shout(d)

    def out_id(d: Doc) -> str:
        return f"loud:{d.source_id}"

    first = await run_stage(sqlite_store, docs, work, output_id=out_id, output_kinds=["doc"], batch_size=4)
    assert first.processed == 11
    assert first.written == {"doc": 10, "rejection": 1}
    assert first.rejected == {"asked_to": 1}
    calls.clear()

    def done_id(d: Doc) -> str:
        return f"shout:{d.id}" if "reject" in d.source_id else out_id(d)

    second = await run_stage(sqlite_store, docs, work, output_id=done_id, output_kinds=["doc", "rejection"])
    assert (second.processed, second.skipped, calls) == (0, 11, [])


async def test_a_crash_keeps_finished_batches(sqlite_store: Store) -> None:
    async def explode_on_7(d: Doc) -> Sequence[Record]:
        if d.source_id == "7":
            raise RuntimeError("boom")
        return await _shout(d)

    docs = [doc(str(i)) for i in range(10)]
    with pytest.raises(RuntimeError):
        await run_stage(
            sqlite_store,
            docs,
            explode_on_7,
            output_id=lambda d: f"loud:{d.source_id}",
            output_kinds=["doc"],
            batch_size=3,
        )
    stored = sqlite_store.has("doc", [f"loud:{i}" for i in range(10)])
    assert {f"loud:{i}" for i in range(6)} <= stored  # everything that finished before the crash is kept
    assert "loud:7" not in stored


def test_track_run_records_outcome(sqlite_store: Store) -> None:
    with track_run(sqlite_store, "demo", settings={"limit": 3}) as run:
        assert sqlite_store.get(Run, run.id) is not None
    stored = sqlite_store.get(Run, run.id)
    assert stored is not None
    assert stored.outcome == "ok"
    assert stored.ended_at is not None
    with pytest.raises(ValueError, match="bad"), track_run(sqlite_store, "demo") as failing:
        raise ValueError("bad")
    failed = sqlite_store.get(Run, failing.id)
    assert failed is not None
    assert failed.outcome == "failed"
    assert failed.error == "ValueError: bad"


async def test_a_slow_item_does_not_hold_back_the_window(sqlite_store: Store) -> None:
    import asyncio

    released = asyncio.Event()

    async def first_waits_for_the_eleventh(d: Doc) -> Sequence[Record]:
        if d.source_id == "0":  # with batch-by-batch processing, item 10 would never start: a timeout
            await asyncio.wait_for(released.wait(), timeout=5)
        if d.source_id == "10":
            released.set()
        return await _shout(d)

    docs = [doc(str(i)) for i in range(20)]
    result = await run_stage(
        sqlite_store,
        docs,
        first_waits_for_the_eleventh,
        output_id=lambda d: f"loud:{d.source_id}",
        output_kinds=["doc"],
        batch_size=4,
    )
    assert result.processed == 20
    assert result.written == {"doc": 20}


async def test_a_crash_stops_the_items_still_in_flight(sqlite_store: Store) -> None:
    import asyncio

    stopped: list[str] = []

    async def slow_or_boom(d: Doc) -> Sequence[Record]:
        if d.source_id == "boom":
            raise RuntimeError("boom")
        try:
            await asyncio.sleep(30)
        finally:
            stopped.append(d.source_id)
        return []

    docs = [doc("slow-1"), doc("boom"), doc("slow-2")]
    with pytest.raises(RuntimeError, match="boom"):
        await run_stage(sqlite_store, docs, slow_or_boom, output_id=lambda d: d.id, output_kinds=["doc"])
    assert sorted(stopped) == ["slow-1", "slow-2"]  # cancelled, and finished, before run_stage returned


async def test_a_watcher_sees_every_finished_item(sqlite_store: Store) -> None:
    from livemed.pipeline.runner import item_progress

    seen: list[int] = []
    token = item_progress.set(seen.append)
    try:
        docs = [doc(str(i)) for i in range(7)]
        await run_stage(
            sqlite_store, docs, _shout, output_id=lambda d: f"loud:{d.source_id}", output_kinds=["doc"]
        )
    finally:
        item_progress.reset(token)
    assert seen[-1] == 7
    assert seen == sorted(seen)  # counts only grow


async def test_the_first_call_goes_out_before_the_whole_window_is_made(sqlite_store: Store) -> None:
    # Each item "makes" its call (prepared), then takes three event-loop turns to send it, as a
    # connection does. The first must be sent before the rest of a 512-item window is made: without a
    # turn for each of the first items, all 512 were made before any was sent.
    prepared: list[str] = []
    sent_after: dict[str, int] = {}

    async def work(d: Doc) -> Sequence[Record]:
        prepared.append(d.source_id)
        for _ in range(3):
            await asyncio.sleep(0)
        sent_after.setdefault(d.source_id, len(prepared))
        return await _shout(d)

    docs = [doc(str(i)) for i in range(600)]
    result = await run_stage(
        sqlite_store, docs, work, output_id=lambda d: f"loud:{d.source_id}", output_kinds=["doc"], window=512
    )
    assert result.processed == 600
    assert sent_after["0"] <= FIRST_TURNS
    assert len(sent_after) == 600
