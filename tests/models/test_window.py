"""models.window: calls in flight per model, halved when over half a window is refused (429),
grown back by replies."""

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


async def test_more_than_half_the_window_refused_halves_it_once_a_round() -> None:
    window = Window(8)
    rounds = await _entered(window, 8)
    assert [window.refused(r) for r in rounds[:5]] == [False, False, False, False, True]  # 5 > 8 / 2
    assert window.size == 4
    assert not any(window.refused(r) for r in rounds[5:])  # out before the cut: no second cut
    assert window.size == 4
    for _ in range(8):
        window.leave()
    later = await _entered(window, 3)
    assert later == [1, 1, 1]
    assert [window.refused(r) for r in later] == [False, False, True]  # 3 > 4 / 2
    assert (window.size, window.smallest) == (2, 2)
    for _ in range(5):
        window.refused(window.round)
    assert window.size == 1  # never below one call


async def test_a_refusal_now_and_then_leaves_the_window_alone() -> None:
    window = Window(32)
    for _ in range(20):  # one 429 in every 16 replies, round after round: never half the window
        round_ = await window.enter()
        assert window.refused(round_) is False
        window.leave()
        for _ in range(16):
            window.served(await window.enter())
            window.leave()
    assert (window.size, window.smallest, window.round) == (32, 32, 0)


async def test_replies_grow_the_window_back_by_one_call_a_window_of_replies() -> None:
    window = Window(4)
    rounds = await _entered(window, 3)
    assert [window.refused(r) for r in rounds] == [False, False, True]  # 3 > 4 / 2
    assert window.size == 2
    window.served(window.round)
    window.served(window.round)
    assert window.size == pytest.approx(2.9, abs=0.01)  # 2 + 1/2 + 1/2.5
    for _ in range(20):
        window.served(window.round)
    assert window.size == 4  # up to max_concurrency, not past it


async def test_a_wider_window_lets_the_waiting_calls_in() -> None:
    window = Window(2)
    rounds = await _entered(window, 2)
    assert [window.refused(r) for r in rounds] == [False, True]  # 2 > 2 / 2: size 1
    window.leave()  # one call in flight, the window's one place
    waiting = asyncio.create_task(window.enter())
    await asyncio.sleep(0)
    assert not waiting.done()
    window.served(window.round)  # 1 + 1/1 = 2 places
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
