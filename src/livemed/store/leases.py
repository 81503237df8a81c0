"""Leases: at most one live command per stage and model on a store.

A lease is a row of `run_state` (namespace `lease`) naming the run that holds it, with its pid, host
and a heartbeat. A second `livemed grade --judge J` on the same store finds the first one's lease and
stops with one line instead of paying for the same calls again. A lease whose holder is gone — its
process no longer exists on this host, or its heartbeat is older than `stale_after_s` — is taken
over. Taking a lease is one write transaction (`BEGIN IMMEDIATE` on SQLite, `SELECT … FOR UPDATE`
on PostgreSQL; two processes inserting at once on PostgreSQL collide on the primary key and the
loser looks again), so two processes never both hold it.

```python
holder = Holder.here(run_id="ab12", command="grade")
acquire(store, "grade:openai/gpt-4o", holder)     # StageBusyError if a live process holds it
refresh(store, "grade:openai/gpt-4o", holder)     # the heartbeat, every few seconds
release(store, "grade:openai/gpt-4o", holder)
```
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from livemed.errors import StageBusyError
from livemed.records.base import utcnow
from livemed.records.rows import naive_utc
from livemed.store.schema import state_table

if TYPE_CHECKING:
    from livemed.store import Store

NAMESPACE = "lease"
STALE_AFTER_S = 120.0  # a heartbeat older than this means the holder is gone
HEARTBEAT_S = 10.0  # how often a holder refreshes its lease (and its Run's usage)


def this_host() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def gone(pid: int | None, host: str | None, last_seen: datetime, *, stale_after_s: float) -> bool:
    """Whether the process that last showed life at `last_seen` is gone: dead on this host, or silent
    for longer than `stale_after_s` anywhere."""
    if utcnow() - last_seen > timedelta(seconds=stale_after_s):
        return True
    return pid is not None and host == this_host() and not pid_alive(pid)


@dataclass(frozen=True)
class Holder:
    """Who holds a lease."""

    run_id: str
    command: str
    pid: int
    host: str
    heartbeat_at: str  # ISO time with zone

    @classmethod
    def here(cls, run_id: str, command: str) -> Holder:
        return cls(run_id, command, os.getpid(), this_host(), utcnow().isoformat())

    def beat(self) -> Holder:
        return replace(self, heartbeat_at=utcnow().isoformat())

    def describe(self) -> str:
        age = (utcnow() - datetime.fromisoformat(self.heartbeat_at)).total_seconds()
        return f"run {self.run_id}, pid {self.pid} on {self.host}, last heartbeat {age:.0f} s ago"


def _holder(value: str) -> Holder | None:
    try:
        return Holder(**json.loads(value))
    except (TypeError, ValueError):
        return None


def acquire(
    store: Store, name: str, holder: Holder, *, stale_after_s: float = STALE_AFTER_S
) -> Holder | None:
    """Take lease `name` for `holder`; returns the dead holder it was taken from, if any.

    Raises `StageBusyError` when a live process holds it.
    """
    for _ in range(3):
        try:
            return _acquire_once(store, name, holder, stale_after_s)
        except sa.exc.IntegrityError:  # PostgreSQL: another process inserted it first; look again
            continue
    raise StageBusyError(f"could not take the lease {name!r} on {store.location}: it keeps changing hands")


def _acquire_once(store: Store, name: str, holder: Holder, stale_after_s: float) -> Holder | None:
    where = (state_table.c.namespace == NAMESPACE) & (state_table.c.key == name)
    query = sa.select(state_table.c.value).where(where)
    if store.dialect == "postgresql":
        query = query.with_for_update()
    row = {"namespace": NAMESPACE, "key": name, "updated_at": naive_utc(utcnow()), "value": _dump(holder)}
    with store.transaction() as conn:
        value = conn.execute(query).scalar_one_or_none()
        if value is None:
            conn.execute(state_table.insert().values(**row))
            return None
        current = _holder(value)
        if current is not None and current.run_id != holder.run_id and _alive(current, stale_after_s):
            raise StageBusyError(
                f"another `livemed {current.command}` is already running this stage on {store.location} "
                f"({current.describe()}); wait for it to finish, or stop it"
            )
        conn.execute(state_table.update().where(where).values(**row))
        return current if current is not None and current.run_id != holder.run_id else None


def live_holder(store: Store, name: str, *, stale_after_s: float = STALE_AFTER_S) -> Holder | None:
    """Who holds lease `name` now, if that process is alive (None: the lease is free or its holder gone)."""
    where = (state_table.c.namespace == NAMESPACE) & (state_table.c.key == name)
    with store.reading() as conn:
        value = conn.execute(sa.select(state_table.c.value).where(where)).scalar_one_or_none()
    current = _holder(value) if value is not None else None
    return current if current is not None and _alive(current, stale_after_s) else None


def _alive(holder: Holder, stale_after_s: float) -> bool:
    last = datetime.fromisoformat(holder.heartbeat_at)
    return not gone(holder.pid, holder.host, last, stale_after_s=stale_after_s)


def refresh(store: Store, name: str, holder: Holder) -> Holder:
    """Renew `holder`'s heartbeat on lease `name` (only while it still holds it)."""
    fresh = holder.beat()
    where = (
        (state_table.c.namespace == NAMESPACE)
        & (state_table.c.key == name)
        & (state_table.c.value.like(f'{{"run_id": "{holder.run_id}"%'))
    )
    with store.transaction() as conn:
        conn.execute(
            state_table.update().where(where).values(value=_dump(fresh), updated_at=naive_utc(utcnow()))
        )
    return fresh


def release(store: Store, name: str, holder: Holder) -> None:
    """Give lease `name` back, if `holder` still holds it."""
    where = (
        (state_table.c.namespace == NAMESPACE)
        & (state_table.c.key == name)
        & (state_table.c.value.like(f'{{"run_id": "{holder.run_id}"%'))
    )
    with store.transaction() as conn:
        conn.execute(state_table.delete().where(where))


def _dump(holder: Holder) -> str:
    return json.dumps(asdict(holder))  # run_id first: refresh and release match on that prefix
