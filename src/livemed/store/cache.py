"""The response cache: each model call's response by the key of its request, so a re-run pays for no
call twice (`models.cache`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from livemed.records import utcnow
from livemed.records.rows import naive_utc
from livemed.store.base import StoreBase
from livemed.store.schema import cache_table


class ResponseCache(StoreBase):
    """Cached model responses by request key (JSON payloads)."""

    def cache_get(self, key: str) -> dict[str, Any] | None:
        with self.reading() as conn:
            payload = conn.execute(
                sa.select(cache_table.c.payload).where(cache_table.c.key == key)
            ).scalar_one_or_none()
        return None if payload is None else dict(json.loads(payload))

    def cache_put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        row = {"key": key, "model": model, "created_at": naive_utc(utcnow()), "payload": json.dumps(payload)}
        with self.transaction() as conn:
            self._upsert(conn, cache_table, [row], ["key"])

    def cache_get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Cached payloads for those of `keys` that are in the cache (one query per `Store.chunk` keys)."""
        return {key: dict(json.loads(text)) for key, text in self.cache_get_many_json(keys).items()}

    def cache_get_many_json(self, keys: Sequence[str]) -> dict[str, str]:
        """Like `cache_get_many`, with each payload as its stored JSON text (for fast validation)."""
        found: dict[str, str] = {}
        with self.reading() as conn:
            for start in range(0, len(keys), self.chunk):
                chunk = list(keys[start : start + self.chunk])
                query = sa.select(cache_table.c.key, cache_table.c.payload).where(
                    self.one_of(cache_table.c.key, chunk)
                )
                found.update((key, payload) for key, payload in conn.execute(query).all())
        return found

    def cache_put_many(self, entries: Sequence[tuple[str, str, dict[str, Any] | str]]) -> int:
        """Write `(key, model, payload)` entries in one transaction (a payload given as a str is its JSON
        text already); returns how many."""
        now = naive_utc(utcnow())
        rows = [
            {
                "key": key,
                "model": model,
                "created_at": now,
                "payload": payload if isinstance(payload, str) else json.dumps(payload),
            }
            for key, model, payload in entries
        ]
        with self.transaction() as conn:
            self._upsert(conn, cache_table, rows, ["key"])
        return len(rows)

    def cache_count(self) -> int:
        with self.reading() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(cache_table)).scalar_one())
