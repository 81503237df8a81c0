"""The response cache in the store, with batched reads and write-behind writes.

Reads that arrive in the same event-loop turn share one query (a fully cached run of thousands of
calls makes a handful of queries). Writes wait in a small buffer that is written in one transaction.
An entry put with `soon=True` (the engine does this for every paid call) is written in the next
event-loop turn, together with every entry put in the same turn; other entries are written when the
buffer holds `flush_every` entries or `flush_after_s` after its first entry, whichever comes first.
`flush()` writes the buffer now. A `kill -9` loses only what is still buffered: paid replies that
returned in the loop turn of the kill, and free models' replies of the last `flush_after_s`; those
calls are made again by the next run. A buffer left unflushed is also written when the cache is
garbage-collected or the interpreter exits (SIGINT and SIGTERM end a command that way).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from livemed.store import Store

log = logging.getLogger("livemed.models")

CacheMode = Literal["on", "read-only", "off"]
Payload = dict[str, Any] | str  # a payload as a dict, or as its JSON text
Pending = dict[str, tuple[str, Payload]]  # key -> (model id, payload)


class ResponseCache:
    """Completions by cache key, in `store`; `mode` is "on", "read-only" or "off"."""

    def __init__(
        self, store: Store | None, mode: CacheMode, *, flush_every: int = 32, flush_after_s: float = 0.5
    ) -> None:
        self.store = store
        self.mode: CacheMode = mode if store is not None else "off"
        self.flush_every = flush_every
        self.flush_after_s = flush_after_s
        self.reads = 0  # queries made
        self._pending: Pending = {}
        self._waiting: dict[str, list[asyncio.Future[Payload | None]]] = {}
        self._read_scheduled: asyncio.AbstractEventLoop | None = None  # the loop a batch read is queued on
        self._timer: asyncio.Handle | None = None
        self._turn_scheduled = False  # a write in the next loop turn is queued
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        if store is not None:
            weakref.finalize(self, _write_rows, store, self._pending)

    @property
    def readable(self) -> bool:
        return self.mode != "off"

    @property
    def writable(self) -> bool:
        return self.mode == "on"

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def get(self, key: str) -> Payload | None:
        """The cached payload for `key` (as it was put while buffered, else its stored JSON text), or None.

        Lookups made in the same event-loop turn share one query.
        """
        if not self.readable:
            return None
        if key in self._pending:
            return self._pending[key][1]
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Payload | None] = loop.create_future()
        self._waiting.setdefault(key, []).append(future)
        if self._read_scheduled is not loop:
            self._read_scheduled = loop
            loop.call_soon(self._read_batch)
        return await future

    def _read_batch(self) -> None:
        self._read_scheduled = None
        waiting, self._waiting = self._waiting, {}
        assert self.store is not None
        try:
            self.reads += 1
            found = self.store.cache_get_many_json(list(waiting))
        except Exception as exc:
            for futures in waiting.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
            return
        for key, futures in waiting.items():
            for future in futures:
                if not future.done() and not future.get_loop().is_closed():
                    future.set_result(found.get(key))

    def put(self, key: str, model: str, payload: Payload, *, soon: bool = False) -> None:
        """Buffer one completion (a dict, or its JSON text as stored); written soon, or in the next loop
        turn with `soon` (module docstring)."""
        if not self.writable:
            return
        self._pending[key] = (model, payload)
        if len(self._pending) >= self.flush_every:
            self.flush()
            return
        loop = asyncio.get_running_loop()
        if soon and not self._turn_scheduled:
            if self._timer is not None:
                self._timer.cancel()
            self._turn_scheduled = True
            self._timer = loop.call_soon(self._flush_later)
            self._timer_loop = loop
        elif self._timer is None or self._timer_loop is not loop:
            self._timer = loop.call_later(self.flush_after_s, self._flush_later)
            self._timer_loop = loop

    def flush(self) -> int:
        """Write the buffer now, in one transaction; returns how many entries were written."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._turn_scheduled = False
        if not self._pending or self.store is None:
            return 0
        written = self.store.cache_put_many(
            [(key, model, payload) for key, (model, payload) in self._pending.items()]
        )
        self._pending.clear()
        return written

    def _flush_later(self) -> None:
        self._timer = None
        self._turn_scheduled = False
        try:
            self.flush()
        except Exception as exc:  # e.g. the store is locked: keep the buffer and try again later
            log.warning("could not write %d cached response(s) yet: %s", len(self._pending), exc)
            self._timer = asyncio.get_running_loop().call_later(self.flush_after_s * 4, self._flush_later)


def _write_rows(store: Store, pending: Pending) -> None:
    """Last-chance write of a buffer nobody flushed (runs at garbage collection or exit)."""
    if not pending:
        return
    try:
        store.cache_put_many([(key, model, payload) for key, (model, payload) in pending.items()])
        pending.clear()
    except Exception as exc:  # the store may already be gone at interpreter exit
        log.warning("lost %d cached response(s) at exit: %s", len(pending), exc)
