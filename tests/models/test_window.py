"""models.window: calls in flight per model, halved on a 429 once a round, grown back by replies."""

from __future__ import annotations

import asyncio

import pytest

from livemed.models.window import Window


async def _entered(window: Window, n: int) -> list[int]:
    return [await window.enter() for _ in range(n)]


async def test_calls_over_the_window_wait_in_order_and_are_let_in_as_places_free() -> None:
    window = Window(2)
    assert await _entered(window, 2) == [0, 0]
    order: list[int] = []

    async def call(i: int) -> None:
        await window.enter()
        order.append(i)

    waiting = [asyncio.create_task(call(i)) for i in range(3)]
    await asyncio.sleep(0)
    assert (window.in_flight, order) == (2, [])
    window.leave()
    await asyncio.sleep(0)
    assert (window.in_flight, order) == (2, [0])
    window.leave()
    window.leave()
    await asyncio.gather(*waiting)
    assert (window.in_flight, order) == (2, [0, 1, 2])


async def test_a_429_halves_the_window_once_a_round() -> None:
    window = Window(8)
    rounds = await _entered(window, 8)
    assert window.refused(rounds[0]) is True
    assert window.size == 4
    assert not any(window.refused(r) for r in rounds[1:])  # sent before the cut: no second cut
    assert window.size == 4
    for _ in range(8):
        window.leave()
    later = await window.enter()
    assert later == 1
    assert window.refused(later) is True
    assert (window.size, window.smallest) == (2, 2)
    for _ in range(5):
        window.refused(window.round)
    assert window.size == 1  # never below one call


async def test_replies_grow_the_window_back_by_one_call_a_window_of_replies() -> None:
    window = Window(4)
    window.refused(await window.enter())
    window.leave()
    assert window.size == 2
    window.served()
    window.served()
    assert window.size == pytest.approx(2.9, abs=0.01)  # 2 + 1/2 + 1/2.5
    for _ in range(20):
        window.served()
    assert window.size == 4  # up to max_concurrency, not past it


async def test_a_wider_window_lets_the_waiting_calls_in() -> None:
    window = Window(2)
    window.refused(await window.enter())  # size 1, one call in flight
    waiting = asyncio.create_task(window.enter())
    await asyncio.sleep(0)
    assert not waiting.done()
    window.served()  # 1 + 1/1 = 2 places
    await asyncio.wait_for(waiting, 1)
    assert window.in_flight == 2


async def test_a_cancelled_waiter_takes_no_place() -> None:
    window = Window(1)
    await window.enter()
    waiting = asyncio.create_task(window.enter())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    window.leave()
    assert window.in_flight == 0
    assert await window.enter() == 0
    assert window.in_flight == 1


async def test_a_waiter_let_in_as_it_is_cancelled_hands_its_place_on() -> None:
    window = Window(1)
    await window.enter()
    first = asyncio.create_task(window.enter())
    second = asyncio.create_task(window.enter())
    await asyncio.sleep(0)
    window.leave()  # the place goes to `first` ...
    first.cancel()  # ... cancelled before it runs: the place is passed to `second`
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    assert window.in_flight == 1
