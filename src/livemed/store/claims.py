"""Work-item claims: several workers on one PostgreSQL store partition a stage's items.

A claim is a `run_state` row (namespace `claim`, key `<scope>|<item id>`) naming the worker that holds
it (a random id, its pid and host); its `updated_at` is the holder's last heartbeat. `run_stage`
claims each batch of pending items before it runs them and gives the claims back once their outputs
are written, so N `livemed grade` / `answer` / `curate` / `eval` processes on one store run every
item once. Claiming is one transaction:

1. the items nobody claims are inserted (`ON CONFLICT DO NOTHING`, in key order so two workers never
   deadlock; on PostgreSQL one statement over an array of keys, `RETURNING` the ones inserted): those
   are ours;
2. of the rest, the existing claims are read `FOR UPDATE SKIP LOCKED`: rows another worker is taking
   at this moment are skipped, not waited for;
3. those whose holder is gone (heartbeat older than `ttl_s`, or its process dead on this host) are
   taken over, with an `UPDATE`.

A worker gives back its claims when it ends, and removes the gone holders' claims of its scope with
them (a worker killed between writing an item and giving back its claim leaves one nobody takes over).

A heartbeat thread renews the holder's claims every `ttl_s / 6` seconds, so a worker killed with
`kill -9` leaves claims that expire after `ttl_s` (at once for a process gone from this host) and
another worker re-claims them. On SQLite the stage lease (`store.leases`) keeps one process per stage
and model, so `run_stage` claims nothing there.

```python
claims = Claims(store, "grade")
with claims.beating():
    mine = claims.take(["grade:a", "grade:b"])      # the keys this worker holds now
    ...                                            # run them, write the outputs
    claims.release(mine)
```
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from livemed.records.base import utcnow
from livemed.records.rows import naive_utc
from livemed.store.leases import pid_alive, this_host
from livemed.store.schema import state_table

if TYPE_CHECKING:
    from livemed.store import Store

log = logging.getLogger("livemed.claims")

NAMESPACE = "claim"
CLAIM_TTL_S = float(os.environ.get("LIVEMED_CLAIM_TTL_S", "60"))  # a claim not renewed this long is free

# The free claims of a batch, inserted by one statement over an array of keys (see `Claims._insert_free`).
_INSERT_FREE = (
    "INSERT INTO run_state (namespace, key, updated_at, value) "
    "SELECT %(namespace)s, k, %(now)s, %(value)s FROM unnest(%(keys)b::text[]) AS k ORDER BY k "
    "ON CONFLICT (namespace, key) DO NOTHING RETURNING key"
)


class Claims:
    """One worker's claims on the items of one stage scope (e.g. `grade`, `answer`, `case`)."""

    def __init__(self, store: Store, scope: str, *, ttl_s: float = CLAIM_TTL_S) -> None:
        self.store, self.scope, self.ttl_s = store, scope, ttl_s
        self.holder = uuid.uuid4().hex[:16]
        self.pid, self.host = os.getpid(), this_host()
        self.value = json.dumps({"holder": self.holder, "pid": self.pid, "host": self.host})
        self.taken_over = 0  # claims taken from a gone holder (a killed worker's items)

    def _key(self, item: str) -> str:
        return f"{self.scope}|{item}"

    def take(self, items: Sequence[str]) -> set[str]:
        """Claim `items`; returns those this worker holds now (free, taken from a gone holder, or its own)."""
        if not items:
            return set()
        keys = {self._key(item): item for item in items}
        now = utcnow().replace(tzinfo=None)  # naive UTC, as the store keeps times
        with self.store.transaction() as conn:
            mine = self._insert_free(conn, sorted(keys), now)
            rest = sorted(key for key in keys if key not in mine)
            if rest:
                mine.update(self._take_over(conn, rest, now))
        return {keys[key] for key in mine}

    def _insert_free(self, conn: Connection, keys: list[str], now: datetime) -> set[str]:
        """Insert a claim for each of `keys` nobody claims (`ON CONFLICT DO NOTHING`, in key order so
        two workers never deadlock); returns the keys inserted. PostgreSQL: one statement over an
        array of keys, `RETURNING` the inserted ones."""
        if self.store.dialect == "postgresql":
            rows = conn.exec_driver_sql(
                _INSERT_FREE, {"keys": keys, "namespace": NAMESPACE, "now": now, "value": self.value}
            )
            return {key for (key,) in rows}
        fresh = [{"namespace": NAMESPACE, "key": key, "updated_at": now, "value": self.value} for key in keys]
        conn.execute(sqlite.insert(state_table).on_conflict_do_nothing(), fresh)
        inserted = sa.select(state_table.c.key).where(
            state_table.c.namespace == NAMESPACE,
            self.store.one_of(state_table.c.key, keys),
            state_table.c.value == self.value,
        )
        return set(conn.execute(inserted).scalars())

    def _take_over(self, conn: Connection, keys: list[str], now: datetime) -> set[str]:
        """Of `keys`, claimed already, those this worker may take (its own, or from a gone holder),
        taken; a claim row another worker is changing at this moment is skipped, not waited for."""
        found = sa.select(state_table.c.key, state_table.c.value, state_table.c.updated_at).where(
            state_table.c.namespace == NAMESPACE, self.store.one_of(state_table.c.key, keys)
        )
        if self.store.dialect == "postgresql":
            found = found.with_for_update(skip_locked=True)
        rows = conn.execute(found).all()
        takeable = sorted(row.key for row in rows if self._free(row.value, row.updated_at, now))
        if takeable:
            conn.execute(
                state_table.update()
                .where(state_table.c.namespace == NAMESPACE, self.store.one_of(state_table.c.key, takeable))
                .values(value=self.value, updated_at=now)
            )
            self.taken_over += sum(1 for row in rows if row.key in takeable and not self._ours(row.value))
        return set(takeable)

    def release(self, items: Sequence[str]) -> None:
        """Give back this worker's claims on `items` (after their outputs are written, or unfinished)."""
        with self.store.transaction() as conn:
            self._delete_ours(conn, [self._key(item) for item in items])

    def _delete_ours(self, conn: Connection, keys: list[str]) -> None:
        self._delete(conn, keys, state_table.c.value == self.value)

    def _delete(self, conn: Connection, keys: list[str], *where: sa.ColumnElement[bool]) -> None:
        """Delete the claims on `keys` (that also meet `where`), `Store.chunk` keys a statement."""
        for start in range(0, len(keys), self.store.chunk):
            conn.execute(
                state_table.delete().where(
                    state_table.c.namespace == NAMESPACE,
                    self.store.one_of(state_table.c.key, keys[start : start + self.store.chunk]),
                    *where,
                )
            )

    def beat(self) -> int:
        """Renew every claim this worker holds; returns how many."""
        with self.store.transaction() as conn:
            result = conn.execute(
                state_table.update()
                .where(state_table.c.namespace == NAMESPACE, state_table.c.value == self.value)
                .values(updated_at=naive_utc(utcnow()))
            )
        return int(result.rowcount or 0)

    def held_elsewhere(self, items: Sequence[str]) -> set[str]:
        """Those of `items` that another worker claims now (alive or not yet found gone)."""
        keys = {self._key(item): item for item in items}
        query = sa.select(state_table.c.key).where(
            state_table.c.namespace == NAMESPACE,
            self.store.one_of(state_table.c.key, list(keys)),
            state_table.c.value != self.value,
        )
        with self.store.reading() as conn:
            return {keys[key] for key in conn.execute(query).scalars()}

    @contextmanager
    def beating(self) -> Iterator[Claims]:
        """Renew the claims from a thread while the body runs; give back what is still held at the end."""
        stop = threading.Event()
        thread = threading.Thread(target=self._beat_until, args=(stop,), daemon=True, name="livemed-claims")
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=self.ttl_s)
            try:
                self._release_all()
            except Exception as exc:  # the store is gone: the claims expire on their own
                log.warning("could not give back the claims of %s: %s", self.scope, exc)

    def _beat_until(self, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_s / 6):
            try:
                self.beat()
            except Exception as exc:  # a busy store must not stop the worker: the next beat tries again
                log.debug("claim heartbeat failed: %s", exc)

    def _release_all(self) -> None:
        """Give back this worker's claims, and drop those of gone holders in its scope: a worker killed
        after writing an item's outputs and before giving its claim back leaves a claim nobody would
        take over (the item is done), so the next worker to end on that scope removes it."""
        with self.store.transaction() as conn:
            conn.execute(
                state_table.delete().where(
                    state_table.c.namespace == NAMESPACE, state_table.c.value == self.value
                )
            )
            self._delete_gone(conn)

    def _delete_gone(self, conn: Connection) -> None:
        scope = sa.select(state_table.c.key, state_table.c.value, state_table.c.updated_at).where(
            state_table.c.namespace == NAMESPACE,
            state_table.c.key > f"{self.scope}|",  # every key `<scope>|…` (a range of the primary key)
            state_table.c.key < f"{self.scope}}}",  # "}" follows "|"
        )
        if self.store.dialect == "postgresql":
            scope = scope.with_for_update(skip_locked=True)  # a claim being taken now is not gone
        now = utcnow().replace(tzinfo=None)
        gone = sorted(row.key for row in conn.execute(scope) if self._free(row.value, row.updated_at, now))
        self._delete(conn, gone)

    def _ours(self, value: str) -> bool:
        return value == self.value

    def _free(self, value: str, updated_at: datetime | None, now: datetime) -> bool:
        """Whether a claim may be taken: ours, silent for `ttl_s`, or its process gone from this host."""
        if self._ours(value) or updated_at is None or now - updated_at > timedelta(seconds=self.ttl_s):
            return True
        try:
            holder = json.loads(value)
            pid, host = int(holder["pid"]), str(holder["host"])
        except (TypeError, ValueError, KeyError):
            return True  # not a claim this livemed wrote
        return host == self.host and pid != self.pid and not pid_alive(pid)


__all__ = ["CLAIM_TTL_S", "NAMESPACE", "Claims"]
