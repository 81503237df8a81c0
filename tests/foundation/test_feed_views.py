"""`Feed.listen` and `Feed.expand`: one stage's items handed on to another's as they come."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from livemed.pipeline.runner import Feed, run_stage
from livemed.records import Doc, Record
from livemed.store import Store
from tests.foundation.factories import doc


async def test_an_expanded_feed_gets_the_items_waiting_and_later_ones_and_closes_with_its_source() -> None:
    source: Feed[int] = Feed()
    source.put([1])  # waiting before anyone listens: handed to the first listener
    heard: list[list[int]] = []
    source.listen(heard.append)
    pairs = Feed[int]()
    source.listen(lambda items: pairs.put(items))
    source.put([2, 3])
    assert heard == [[1], [2, 3]]
    assert pairs.take(10) == [2, 3]
    doubled = Feed[int]()
    doubled.put([5])
    view = doubled.expand(lambda n: [n, n * 10])
    doubled.put([6])
    assert view.take(10) == [5, 50, 6, 60]
    assert not view.closed
    doubled.close()
    assert view.closed
    assert doubled.take(10) == []  # items go to the listeners, not kept twice


async def test_run_stage_reads_an_expanded_feed_while_it_is_filled(sqlite_store: Store) -> None:
    names: Feed[str] = Feed()
    docs = names.expand(lambda name: [doc(f"{name}-{n}") for n in range(2)])
    seen: list[str] = []
    first_two = asyncio.Event()

    async def work(d: Doc) -> Sequence[Record]:
        seen.append(d.source_id)
        if len(seen) == 2:
            first_two.set()
        return [d]

    stage = asyncio.ensure_future(
        run_stage(sqlite_store, docs, work, output_id=lambda d: d.id, output_kinds=["doc"], batch_size=2)
    )
    names.put(["a"])
    await asyncio.wait_for(first_two.wait(), 10)  # the first name's documents, before the second is put
    names.put(["b"])
    names.close()
    result = await stage
    assert seen == ["a-0", "a-1", "b-0", "b-1"]
    assert result.written == {"doc": 4}
