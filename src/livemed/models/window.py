"""How many calls of one model are in flight: at most its `max_concurrency`, fewer while the endpoint
answers 429 (too many requests) to a good part of them.

The window halves (never below 1 call) when more than half a window's worth of calls come back
429 before a window's worth of replies does: an endpoint over its limit refuses most of what is over,
one that refuses now and then (a noisy upstream) is left its pace. Every reply widens the window by one
call per window of replies (1 / window each), back up to `max_concurrency`: additive increase,
multiplicative decrease, as TCP shares a congested link. Calls that were already out when the window
was cut count for nothing after it (they come back 429 too; the cut was for them). A refused call still
waits for its Retry-After and is sent again (the engine's retries); the window decides how many are out
at once, so a rate-limited key settles near the rate it is allowed instead of having every retry
refused together. Calls over the window wait in the order they came.
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
        self._refusals = 0  # 429s to calls of this round since it began or since a window of replies
        self._replies = 0  # replies to calls of this round since then
        self.smallest = ceiling  # the narrowest the window has been (what a test or a debugger reads)
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
        """A call let in during `round_` came back 429. True when this refusal cut the window: the
        refusals since the last cut or clean window of replies are more than half of it."""
        if round_ != self.round:
            return False
        self._refusals += 1
        if self._refusals <= self.size / 2:
            return False
        self.size = max(1.0, self.size / 2)
        self.smallest = min(self.smallest, int(self.size))
        self.round += 1
        self._refusals = self._replies = 0
        return True

    def served(self, round_: int) -> None:
        """A call let in during `round_` had a reply: widen the window by 1 / its size (up to the
        ceiling); a window's worth of replies since the last cut starts the refusals' count again."""
        if round_ == self.round:
            self._replies += 1
            if self._replies >= self.size:
                self._refusals = self._replies = 0
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
