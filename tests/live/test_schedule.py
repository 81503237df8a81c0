"""`livemed schedule`: updates on a cadence under the store lock, with a history in the store."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from livemed.errors import ConfigError, StageBusyError
from livemed.live.schedule import history, parse_every, run_schedule
from livemed.records import Run, utcnow
from livemed.store import Store, leases
from tests.live.helpers import cli, project


def test_every_takes_a_number_and_a_unit() -> None:
    assert parse_every("7d") == timedelta(days=7)
    assert parse_every("90s") == timedelta(seconds=90)
    assert parse_every("2w") == timedelta(weeks=2)
    for bad in ("7", "d", "0h", "1y", "-1d"):
        with pytest.raises(ConfigError):
            parse_every(bad)


def test_ticks_are_every_apart_and_a_locked_out_tick_is_recorded_as_busy(tmp_path: Path) -> None:
    calls: list[str] = []
    slept: list[float] = []

    def once() -> Run:
        calls.append("update")
        if len(calls) == 2:
            raise StageBusyError("another `livemed update` is already running")
        return Run(run_id=f"u{len(calls)}", command="update", outcome="ok", counts={"curate: cases": 3})

    with Store(tmp_path / "s.db") as store:
        done = run_schedule(store, once, timedelta(seconds=60), runs=3, sleep=slept.append)
        assert [d["outcome"] for d in done] == ["ok", "busy", "ok"]
        assert done[0]["new"] == {"curate: cases": 3}
        assert len(slept) == 2
        assert all(59 < s <= 60 for s in slept)
        assert [item["outcome"] for _, item in history(store)] == ["ok", "busy", "ok"]


def test_schedule_runs_update_on_its_cadence_and_keeps_a_history(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=4)
    result = cli(config, "schedule", "--every", "1s", "--runs", "2")
    assert result.exit_code == 0, result.output
    with Store(config.parent / "livemed.db") as store:
        updates = sorted((r for r in store.iter(Run) if r.command == "update"), key=lambda r: r.started_at)
        entries = history(store)
    assert len(updates) == 2
    assert all(r.outcome == "ok" for r in updates)
    ticks = [datetime.fromisoformat(started) for started, _ in entries]
    assert (ticks[1] - ticks[0]).total_seconds() >= 0.99  # one second apart, or the update's length
    assert [item["run_id"] for _, item in entries] == [r.run_id for r in updates]
    assert entries[0][1]["new"].get("harvest: documents kept", 0) > 0
    assert not entries[1][1]["new"]  # the second update found nothing new
    shown = cli(config, "schedule", "--history")
    assert updates[0].run_id in shown.output
    assert updates[1].run_id in shown.output


def test_a_scheduled_update_locked_out_by_another_is_busy_and_does_nothing(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=3)
    other = subprocess.Popen(["sleep", "60"])
    try:
        with Store(config.parent / "livemed.db") as store:
            holder = leases.Holder("someone", "update", other.pid, leases.this_host(), utcnow().isoformat())
            leases.acquire(store, "update", holder)
        result = cli(config, "schedule", "--every", "1s", "--runs", "1")
    finally:
        other.kill()
        other.wait()
    assert result.exit_code == 0, result.output
    assert "busy" in result.output
    assert "already running" in result.output
    with Store(config.parent / "livemed.db") as store:
        assert [item["outcome"] for _, item in history(store)] == ["busy"]
        assert not list(store.iter(Run))  # no update ran


def test_a_schedule_whose_last_update_failed_exits_1_with_one_line(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=3)
    (config.parent / "docs.jsonl").unlink()  # the source fails
    result = cli(config, "schedule", "--every", "1s", "--runs", "1")
    assert result.exit_code == 1
    assert "the last scheduled update" in str(result.exception)
    assert "demo documents not found" in str(result.exception)
