from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from livemed.records import Doc, Rejection


async def collect(iterator: AsyncIterator[Doc | Rejection]) -> tuple[list[Doc], list[Rejection]]:
    docs: list[Doc] = []
    rejections: list[Rejection] = []
    async for item in iterator:
        (docs if isinstance(item, Doc) else rejections).append(item)  # type: ignore[arg-type]
    return docs, rejections


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


FAST: dict[str, Any] = {"backoff_base_s": 0.01, "requests_per_second": 9.5, "max_retries": 2}
