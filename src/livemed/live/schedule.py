"""`livemed schedule`: `update` on a cadence, a short history of what each one did.

Each tick runs one update (the caller's `run_once`); the store lock (`live.update.LOCK`, a lease) keeps
a second update — from cron, another `schedule`, a person — from overlapping it: a tick that finds the
lock held is recorded as `busy` and the schedule waits for the next one. Ticks are `every` apart from
the start of the previous one (an update longer than that is followed at once). The history is kept in
the store (`run_state`, namespace `schedule`), one entry per tick; `history()` reads it back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from livemed.errors import ConfigError, LivemedError, StageBusyError
from livemed.records import Run, utcnow
from livemed.store import Store

HISTORY = "schedule"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_every(text: str) -> timedelta:
    """`30s`, `15m`, `6h`, `7d`, `2w` → a timedelta."""
    found = re.fullmatch(r"\s*(\d+)\s*([smhdw])\s*", text)
    if found is None or int(found.group(1)) == 0:
        raise ConfigError(f"--every must be a number and a unit (s, m, h, d, w), like 7d; got {text!r}")
    return timedelta(seconds=int(found.group(1)) * UNITS[found.group(2)])


def entry(run: Run | None, started: float, error: str | None = None) -> dict[str, Any]:
    """One history entry: the update's run id, outcome, new records per stage, cost, duration."""
    if run is None:
        return {
            "run_id": None,
            "outcome": "busy",
            "seconds": round(time.monotonic() - started, 3),
            "error": error,
        }
    return {
        "run_id": run.run_id,
        "outcome": run.outcome,
        "seconds": round(time.monotonic() - started, 3),
        "new": {k: v for k, v in run.counts.items() if ": " in k and v},
        "cost_usd": round(run.cost_usd, 6),
        "error": run.error or error,
    }


def history(store: Store, last: int = 20) -> list[tuple[str, dict[str, Any]]]:
    """The last `last` ticks, oldest first, as (start time, entry)."""
    items = sorted(store.state_items(HISTORY).items())
    return items[-last:]


def run_schedule(
    store: Store,
    run_once: Callable[[], Run],
    every: timedelta,
    *,
    runs: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_tick: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run `run_once` every `every` (forever, or `runs` times); each tick's entry goes to the history.

    A tick whose update is locked out (`StageBusyError`) or fails with a livemed error is recorded and
    the schedule goes on; anything else (Ctrl-C, SIGTERM) ends it."""
    done: list[dict[str, Any]] = []
    while runs is None or len(done) < runs:
        began, started = utcnow(), time.monotonic()
        try:
            item = entry(run_once(), started)
        except StageBusyError as exc:
            item = entry(None, started, str(exc))
        except LivemedError as exc:  # the update's Run has it too
            item = {**entry(None, started, str(exc)), "outcome": "failed"}
        store.state_set(HISTORY, began.isoformat(), item)
        done.append(item)
        if on_tick is not None:
            on_tick(item)
        if runs is not None and len(done) >= runs:
            break
        sleep(max(0.0, every.total_seconds() - (time.monotonic() - started)))
    return done


__all__ = ["HISTORY", "history", "parse_every", "run_schedule"]
