"""How many calls of one model are in flight: at most its `max_concurrency`, fewer while the endpoint
answers 429 (too many requests).

A 429 halves the model's window (never below 1 call); every reply after that widens it by one call
per window of replies (1 / window each), back up to `max_concurrency`: additive increase,
multiplicative decrease, as TCP shares a congested link. One cut per round: the calls that were
already in flight when the window was cut come back 429 too, and they do not cut it again (a round
ends at the cut; a 429 to a call let in before it counts for nothing). A refused call still waits
for its Retry-After and is sent again (the engine's retries); the window only decides how many are
out at once, so a rate-limited key settles near the rate it is allowed instead of having every
retry refused together. Calls over the window wait in the order they came.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Window:
    """The calls in flight for one model, on one event loop."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.size = float(ceiling)  # calls allowed out at once now: int(size) of them
        self.in_flight = 0
        self.round = 0  # cuts so far; a call remembers the round it was let in during
        self.smallest = ceiling  # the narrowest the window has been (for the run's summary)
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def enter(self) -> int:
        """Wait for a place in the window; returns the round the call was let in during."""
        if self.in_flight < int(self.size) and not self._waiting:
            self.in_flight += 1
            return self.round
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn  # `_let_in` counted this call in flight when it set the result
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.leave()  # let in just as it was cancelled: the place goes to the next call
            else:
                self._waiting.remove(turn)
            raise
        return self.round

    def leave(self) -> None:
        """A call that `enter` let in has ended (however it ended)."""
        self.in_flight -= 1
        self._let_in()

    def refused(self, round_: int) -> bool:
        """A call let in during `round_` came back 429: halve the window, once a round. True when
        this call cut it."""
        if round_ != self.round:
            return False
        self.size = max(1.0, self.size / 2)
        self.smallest = min(self.smallest, int(self.size))
        self.round += 1
        return True

    def served(self) -> None:
        """A reply came back: widen the window by 1 / its size, up to the ceiling."""
        if self.size < self.ceiling:
            self.size = min(float(self.ceiling), self.size + 1 / self.size)
            self._let_in()

    def _let_in(self) -> None:
        while self._waiting and self.in_flight < int(self.size):
            turn = self._waiting.popleft()
            if not turn.done():
                self.in_flight += 1
                turn.set_result(None)


__all__ = ["Window"]
