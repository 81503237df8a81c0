"""Work-item claims (`store.claims`) and `run_stage` partitioning items between workers on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa

from livemed.pipeline.runner import StageResult, run_stage
from livemed.records import Record, Rejection, utcnow
from livemed.store import Store, naive_utc
from livemed.store.claims import NAMESPACE, Claims
from livemed.store.schema import state_table
from tests.conftest import _fresh_postgres, _postgres_url
from tests.foundation.test_leases import dead_pid


@pytest.fixture
def pg_store() -> Iterator[Store]:
    base = _postgres_url()
    if not base:
        pytest.skip("PostgreSQL not configured (set LIVEMED_TEST_POSTGRES_URL; .ci/run does)")
    yield from _fresh_postgres(base)


def _age(store: Store, scope: str, item: str, seconds: float, **holder: object) -> None:
    """Make a claim look `seconds` old (and, with `holder`, held by someone else)."""
    values: dict[str, object] = {"updated_at": naive_utc(utcnow() - timedelta(seconds=seconds))}
    if holder:
        values["value"] = json.dumps({"holder": "someone", **holder})
    with store.transaction() as conn:
        conn.execute(
            state_table.update()
            .where(state_table.c.namespace == NAMESPACE, state_table.c.key == f"{scope}|{item}")
            .values(**values)
        )


def test_an_item_is_held_by_one_worker_until_given_back(any_store: Store) -> None:
    first, second = Claims(any_store, "grade"), Claims(any_store, "grade")
    assert first.take(["a", "b"]) == {"a", "b"}
    assert second.take(["a", "b", "c"]) == {"c"}
    assert first.take(["a"]) == {"a"}  # its own claim stays its own
    assert second.held_elsewhere(["a", "b", "c"]) == {"a", "b"}
    first.release(["a"])
    assert second.take(["a", "b"]) == {"a"}
    second.release(["b"])  # not second's: nothing happens
    assert second.held_elsewhere(["b"]) == {"b"}
    assert Claims(any_store, "answer").take(["b"]) == {"b"}  # another scope, another item


def test_a_silent_or_dead_holder_loses_its_claims(any_store: Store) -> None:
    live = Claims(any_store, "case", ttl_s=60)
    assert live.take(["silent", "dead", "fresh"]) == {"silent", "dead", "fresh"}
    _age(any_store, "case", "silent", 61, pid=1, host="another-host")
    _age(any_store, "case", "dead", 0, pid=dead_pid(), host=live.host)
    _age(any_store, "case", "fresh", 0, pid=1, host="another-host")
    other = Claims(any_store, "case", ttl_s=60)
    assert other.take(["silent", "dead", "fresh"]) == {"silent", "dead"}
    assert other.taken_over == 2


def _renewed_since(store: Store, scope: str, item: str, since: datetime) -> bool:
    with store.engine.connect() as conn:
        stamp = conn.execute(
            sa.select(state_table.c.updated_at).where(
                state_table.c.namespace == NAMESPACE, state_table.c.key == f"{scope}|{item}"
            )
        ).scalar_one()
    return bool(stamp > since)


def _until(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    """Wait for a state (not for a time): fail only if it never comes."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen in {seconds:g} s")
        time.sleep(0.01)


def test_the_heartbeat_keeps_claims_alive_and_the_end_gives_them_back(any_store: Store) -> None:
    claims = Claims(any_store, "grade", ttl_s=0.6)  # beats every 0.1 s
    with claims.beating():
        assert claims.take(["x"]) == {"x"}
        _age(any_store, "grade", "x", 61)  # silent for a minute: any other worker would take it over
        since = naive_utc(utcnow() - timedelta(seconds=60))
        assert since is not None
        _until(lambda: _renewed_since(any_store, "grade", "x", since), "the heartbeat's renewal")
        assert Claims(any_store, "grade", ttl_s=60).take(["x"]) == set()  # only the heartbeat kept it
    assert Claims(any_store, "grade").held_elsewhere(["x"]) == set()


def test_a_worker_that_ends_removes_the_claims_gone_holders_left_in_its_scope(any_store: Store) -> None:
    """A worker killed after writing an item and before giving its claim back leaves a claim that no
    later worker takes over (the item is done): the next to end on that scope removes it, and only it."""
    left = Claims(any_store, "grade")
    assert left.take(["done", "silent", "alive"]) == {"done", "silent", "alive"}
    _age(any_store, "grade", "done", 0, pid=dead_pid(), host=left.host)  # killed on this host
    _age(any_store, "grade", "silent", 61, pid=1, host="another-host")
    _age(any_store, "grade", "alive", 0, pid=1, host="another-host")  # a live worker elsewhere
    assert Claims(any_store, "answer").take(["done"]) == {"done"}  # another scope's claim
    _age(any_store, "answer", "done", 0, pid=dead_pid(), host=left.host)
    with Claims(any_store, "grade", ttl_s=60).beating() as next_worker:
        assert next_worker.take(["other"]) == {"other"}
    assert set(any_store.state_items(NAMESPACE)) == {"grade|alive", "answer|done"}


def test_a_claim_row_being_taken_is_skipped_not_waited_for(pg_store: Store) -> None:
    gone = Claims(pg_store, "grade", ttl_s=1)
    gone.take(["locked", "free"])
    _age(pg_store, "grade", "locked", 5, pid=1, host="another-host")
    _age(pg_store, "grade", "free", 5, pid=1, host="another-host")
    key = state_table.c.key == "grade|locked"
    # The taker's sessions give up on a row lock after 10 s: had it waited for the locked row instead of
    # skipping it, its take would fail with a lock timeout rather than hang (no clock is read here).
    url = sa.make_url(pg_store.url).update_query_dict({"options": "-c lock_timeout=10s"})
    taker = Store(url.render_as_string(hide_password=False))
    try:
        with pg_store.engine.connect() as conn, conn.begin():
            conn.execute(sa.select(state_table.c.key).where(key).with_for_update())  # another worker's lock
            taken = Claims(taker, "grade", ttl_s=1).take(["locked", "free"])
    finally:
        taker.close()
    assert taken == {"free"}  # the locked row was skipped, not waited for


def _item_work(calls: Counter[str], lock: threading.Lock):  # type: ignore[no-untyped-def]
    async def work(item: str) -> list[Record]:
        with lock:
            calls[item] += 1
        await asyncio.sleep(0.01)
        return [Rejection(record_id=item, record_kind="doc", stage="test", reason="done", detail="d")]

    return work


def _stage(store: Store, items: list[str], calls: Counter[str]) -> StageResult:
    """One worker's stage over `items` (output: a Rejection `test:<item>` each), counting its calls."""
    work = _item_work(calls, threading.Lock())
    return asyncio.run(
        run_stage(store, items, work, output_id=lambda item: f"test:{item}", output_kinds=["rejection"])
    )


def test_two_workers_on_postgresql_run_every_item_once(pg_store: Store) -> None:
    items = [f"doc:{i}" for i in range(200)]
    calls: Counter[str] = Counter()
    lock = threading.Lock()
    results = []

    def worker() -> None:
        store = Store(pg_store.url)
        try:
            result = asyncio.run(
                run_stage(
                    store,
                    items,
                    _item_work(calls, lock),
                    output_id=lambda item: f"test:{item}",
                    output_kinds=["rejection"],
                    batch_size=8,
                )
            )
            results.append(result)
        finally:
            store.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 2
    assert set(calls) == set(items)
    assert set(calls.values()) == {1}  # every item once, by one worker
    assert sum(r.processed for r in results) == len(items)
    assert all(r.seen == r.skipped + r.processed == len(items) for r in results)
    assert sum(r.elsewhere for r in results) >= len(items) - sum(r.processed for r in results) - 1
    assert len(pg_store.has("rejection", [f"test:{i}" for i in items])) == len(items)
    assert pg_store.state_items(NAMESPACE) == {}  # every claim given back


def test_a_worker_takes_over_the_claims_of_a_dead_one(pg_store: Store) -> None:
    items = [f"doc:{i}" for i in range(20)]
    keys = [f"test:{item}" for item in items[:5]]  # run_stage claims an item by its first output id
    dead = Claims(pg_store, "rejection")
    assert dead.take(keys) == set(keys)
    for key in keys:
        _age(pg_store, "rejection", key, 0, pid=dead_pid(), host=dead.host)  # killed on this host
    calls: Counter[str] = Counter()
    result = _stage(pg_store, items, calls)
    assert result.processed == 20
    assert set(calls.values()) == {1}
    assert pg_store.state_items(NAMESPACE) == {}


def test_a_live_workers_items_are_waited_for_not_done_twice(pg_store: Store) -> None:
    items = [f"doc:{i}" for i in range(6)]
    keys = [f"test:{item}" for item in items[:2]]
    other = Claims(pg_store, "rejection")
    assert other.take(keys) == set(keys)
    calls: Counter[str] = Counter()

    async def work(item: str) -> list[Record]:
        calls[item] += 1
        if len(calls) == len(items) - len(keys):  # this worker's last free item: by now it has found the
            pg_store.put(  # other's two claimed, so the other worker writes its outputs and gives them back
                [
                    Rejection(record_id=i, record_kind="doc", stage="test", reason="done", detail="d")
                    for i in items[:2]
                ]
            )
            other.release(keys)
        await asyncio.sleep(0)
        return [Rejection(record_id=item, record_kind="doc", stage="test", reason="done", detail="d")]

    result = asyncio.run(
        run_stage(pg_store, items, work, output_id=lambda item: f"test:{item}", output_kinds=["rejection"])
    )
    assert set(calls) == set(items[2:])
    assert set(calls.values()) == {1}
    assert (result.processed, result.skipped, result.elsewhere) == (4, 2, 2)


def test_items_sharing_a_key_keep_its_claim_until_the_last_is_written(pg_store: Store) -> None:
    """Several items under one claim key (per-criterion grading: an answer's criteria), spread over
    batches: the key stays claimed while any of its items is in flight, and is given back at the end."""
    items = list(range(9))
    other = Claims(pg_store, "rejection")
    free_while_running: list[int] = []
    ran: Counter[int] = Counter()

    async def work(item: int) -> list[Record]:
        ran[item] += 1
        if other.take([f"group:{item // 3}"]):  # another worker could take a key still in use
            free_while_running.append(item)
            other.release([f"group:{item // 3}"])
        await asyncio.sleep(0)
        return [Rejection(record_id=f"doc:{item}", record_kind="doc", stage="test", reason="r", detail="d")]

    result = asyncio.run(
        run_stage(
            pg_store,
            items,
            work,
            output_id=lambda item: [f"group:{item // 3}", f"doc:{item}"],
            output_kinds=["rejection"],
            batch_size=2,  # group 0 spans the batches [0, 1] and [2, 3]
        )
    )
    assert free_while_running == []
    assert set(ran.values()) == {1}
    assert len(ran) == 9
    assert result.processed == 9
    assert pg_store.state_items(NAMESPACE) == {}  # every key given back
