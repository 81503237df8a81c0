"""Small pieces of run state: JSON values by (namespace, key) (watermarks, leases, claims), and the
documents' duplicate-detection signatures (`prefilter.duplicates`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from livemed.records import utcnow
from livemed.records.rows import naive_utc
from livemed.store.base import StoreBase
from livemed.store.schema import signatures_table, state_table


class RunState(StoreBase):
    """Run state by namespace and key, and the duplicate-detection signatures."""

    def state_get(self, namespace: str, key: str) -> Any:
        with self.reading() as conn:
            value = conn.execute(
                sa.select(state_table.c.value).where(
                    state_table.c.namespace == namespace, state_table.c.key == key
                )
            ).scalar_one_or_none()
        return None if value is None else json.loads(value)

    def state_set(self, namespace: str, key: str, value: Any) -> None:
        row = {
            "namespace": namespace,
            "key": key,
            "updated_at": naive_utc(utcnow()),
            "value": json.dumps(value),
        }
        with self.transaction() as conn:
            self._upsert(conn, state_table, [row], ["namespace", "key"])

    def state_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]:
        """The values of those of `keys` that `namespace` holds (one query per `Store.chunk` keys)."""
        return {key: json.loads(value) for key, value in self._lookup("state", namespace, "key", keys)}

    def state_set_many(self, namespace: str, values: dict[str, Any]) -> None:
        """`state_set` of several keys in one transaction."""
        now = naive_utc(utcnow())
        rows = [
            {"namespace": namespace, "key": key, "updated_at": now, "value": json.dumps(value)}
            for key, value in values.items()
        ]
        with self.transaction() as conn:
            self._upsert(conn, state_table, rows, ["namespace", "key"])

    def state_items(self, namespace: str) -> dict[str, Any]:
        query = sa.select(state_table.c.key, state_table.c.value).where(state_table.c.namespace == namespace)
        with self.reading() as conn:
            return {key: json.loads(value) for key, value in conn.execute(query).all()}

    # ------------------------------------------------------------------ duplicate-detection signatures

    def signatures_put(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Upsert (doc id, exact-text hash, MinHash signature bytes) rows in one transaction."""
        payload = [{"doc_id": d, "exact": e, "minhash": m} for d, e, m in rows]
        with self.transaction() as conn:
            self._upsert(conn, signatures_table, payload, ["doc_id"])

    def signatures_clear(self) -> None:
        """Delete every stored signature (before re-signing with new MinHash parameters)."""
        with self.transaction() as conn:
            conn.execute(signatures_table.delete())

    def signatures_iter(self, *, batch_size: int = 5000) -> Iterator[tuple[str, str, bytes]]:
        """Every stored signature, streamed in doc-id order."""
        last = ""
        columns = (signatures_table.c.doc_id, signatures_table.c.exact, signatures_table.c.minhash)
        while True:
            query = sa.select(*columns).where(signatures_table.c.doc_id > last)
            with self.reading() as conn:
                rows = conn.execute(query.order_by(signatures_table.c.doc_id).limit(batch_size)).all()
            if not rows:
                return
            yield from ((r.doc_id, r.exact, bytes(r.minhash)) for r in rows)
            last = rows[-1].doc_id
