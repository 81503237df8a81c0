"""Leases on a store (SQLite and PostgreSQL) and the sweep that marks dead runs interrupted."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

import pytest

from livemed.errors import StageBusyError
from livemed.pipeline.runs import mark_dead_runs, track_run
from livemed.records import Run, Usage, utcnow
from livemed.store import Store, leases


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_live_holder_keeps_the_lease_and_a_second_is_refused(any_store: Store) -> None:
    first = leases.Holder.here("run-a", "grade")
    assert leases.acquire(any_store, "grade:judge", first) is None
    with pytest.raises(
        StageBusyError, match=r"another `livemed grade` is already running .* \(run run-a, pid"
    ):
        leases.acquire(any_store, "grade:judge", leases.Holder.here("run-b", "grade"))
    assert leases.acquire(any_store, "grade:other-judge", leases.Holder.here("run-b", "grade")) is None
    leases.release(any_store, "grade:judge", first)
    assert leases.acquire(any_store, "grade:judge", leases.Holder.here("run-b", "grade")) is None


def test_a_dead_or_silent_holder_is_taken_over(any_store: Store) -> None:
    dead = replace(leases.Holder.here("run-dead", "answer"), pid=dead_pid())
    leases.acquire(any_store, "answer:m", dead)
    taken = leases.acquire(any_store, "answer:m", leases.Holder.here("run-new", "answer"))
    assert taken is not None
    assert taken.run_id == "run-dead"

    old = (utcnow() - timedelta(seconds=leases.STALE_AFTER_S + 5)).isoformat()
    silent = replace(leases.Holder.here("run-silent", "answer"), host="another-host", heartbeat_at=old)
    leases.acquire(any_store, "answer:n", silent)
    assert leases.acquire(any_store, "answer:n", leases.Holder.here("run-2", "answer")) is not None


def test_release_and_refresh_only_touch_ones_own_lease(any_store: Store) -> None:
    mine, theirs = leases.Holder.here("run-mine", "grade"), leases.Holder.here("run-theirs", "grade")
    leases.acquire(any_store, "grade:j", theirs)
    leases.release(any_store, "grade:j", mine)  # not mine: nothing happens
    with pytest.raises(StageBusyError):
        leases.acquire(any_store, "grade:j", mine)
    before = any_store.state_get(leases.NAMESPACE, "grade:j")
    leases.refresh(any_store, "grade:j", theirs)
    assert any_store.state_get(leases.NAMESPACE, "grade:j")["heartbeat_at"] >= before["heartbeat_at"]


def test_two_processes_racing_for_one_lease_get_it_once(any_store: Store) -> None:
    holders = [leases.Holder.here(f"run-{i}", "answer") for i in range(8)]

    def take(holder: leases.Holder) -> bool:
        try:
            leases.acquire(any_store, "answer:race", holder)
        except StageBusyError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        won = list(pool.map(take, holders))
    assert sum(won) == 1


def test_track_run_holds_the_lease_and_gives_it_back(sqlite_store: Store) -> None:
    any_store = sqlite_store  # PostgreSQL: no lease, workers claim items (tests/foundation/test_claims.py)
    with track_run(any_store, "grade", lease="grade:j") as run:
        with pytest.raises(StageBusyError), track_run(any_store, "grade", lease="grade:j"):
            pass
        assert any_store.state_get(leases.NAMESPACE, "grade:j")["run_id"] == run.run_id
    assert any_store.state_get(leases.NAMESPACE, "grade:j") is None
    assert [r.outcome for r in any_store.iter(Run)] == ["ok"]  # the refused run left no record


def test_dead_runs_are_marked_interrupted_and_keep_their_usage(any_store: Store) -> None:
    usage = {"openai/x": Usage(calls=7, cost_usd=0.5)}
    now = utcnow()
    killed = Run(run_id="killed", command="answer", pid=dead_pid(), host=leases.this_host(), heartbeat_at=now)
    killed.usage = usage
    alive = Run(
        run_id="alive",
        command="grade",
        pid=leases.os.getpid(),  # type: ignore[attr-defined]
        host=leases.this_host(),
        heartbeat_at=now,
    )
    elsewhere = Run(run_id="far", command="grade", pid=1, host="another-host", heartbeat_at=now)
    ancient = Run(run_id="old", command="grade", started_at=now - timedelta(days=2))  # from an older livemed
    any_store.put([killed, alive, elsewhere, ancient])
    marked = {r.run_id for r in mark_dead_runs(any_store)}
    assert marked == {"killed", "old"}
    stored = {r.run_id: r for r in any_store.iter(Run)}
    assert stored["killed"].outcome == "interrupted"
    assert stored["killed"].usage["openai/x"].calls == 7
    assert "ended without finishing" in (stored["killed"].error or "")
    assert stored["alive"].outcome == stored["far"].outcome == "running"


def test_an_interrupted_command_records_interrupted(any_store: Store) -> None:
    with pytest.raises(KeyboardInterrupt), track_run(any_store, "answer", lease="answer:m"):
        raise KeyboardInterrupt
    [run] = any_store.iter(Run)
    assert run.outcome == "interrupted"
    assert any_store.state_get(leases.NAMESPACE, "answer:m") is None
