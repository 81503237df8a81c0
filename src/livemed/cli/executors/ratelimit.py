"""A request- and token-rate limit shared by several workers: reservations on a virtual schedule (GCRA).

Each `reserve` books its place on the schedule of one key (a model id) and returns how long the caller
waits before sending; nothing is held while it waits, so one holder of the schedule (a Ray actor,
`executors.ray.RateActor`) serves any number of workers with one short call per request. Bursts are
one second's worth (at least one request, or one request's tokens).

```python
schedule = Reservations()
delay = schedule.reserve("openai/gpt-4o", rpm=600, tpm=None, tokens=800)   # seconds to wait
```
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class _Bucket:
    per_second: float
    burst: float  # how much may go at once (in the unit of the bucket)
    tat: float = 0.0  # the theoretical arrival time of the next unit


@dataclass
class Reservations:
    """Schedules per (key, unit); `clock` is monotonic seconds."""

    clock: Callable[[], float] = time.monotonic
    buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict)

    def reserve(self, key: str, rpm: float | None, tpm: float | None, tokens: int) -> float:
        """Book one request of `tokens` tokens for `key`; the seconds the caller waits before sending."""
        now = self.clock()
        delay = 0.0
        if rpm:
            delay = max(delay, self._book(key, "requests", rpm, 1.0, now))
        if tpm:
            delay = max(delay, self._book(key, "tokens", tpm, float(max(tokens, 1)), now))
        return delay

    def _book(self, key: str, unit: str, per_minute: float, amount: float, now: float) -> float:
        bucket = self.buckets.get((key, unit))
        per_second = per_minute / 60
        if bucket is None or bucket.per_second != per_second:
            bucket = self.buckets[(key, unit)] = _Bucket(per_second, max(1.0, per_second), now)
        amount = min(amount, bucket.burst)  # a request larger than a burst waits for a whole burst
        tat = max(bucket.tat, now)
        bucket.tat = tat + amount / per_second
        return max(0.0, bucket.tat - bucket.burst / per_second - now)


__all__ = ["Reservations"]
