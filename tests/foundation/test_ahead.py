"""common.ahead.read_ahead: each chunk with its read, in order, the next read made while the caller works."""

from __future__ import annotations

import threading

import pytest

from livemed.common.ahead import read_ahead


def test_chunks_come_in_order_with_their_reads_made_in_another_thread() -> None:
    threads: set[int] = set()

    def read(chunk: list[int]) -> int:
        threads.add(threading.get_ident())
        return sum(chunk)

    chunks = [[1, 2], [3], [], [4, 5, 6]]
    assert list(read_ahead(chunks, read)) == [([1, 2], 3), ([3], 3), ([], 0), ([4, 5, 6], 15)]
    assert threads
    assert threading.get_ident() not in threads
    assert list(read_ahead([], read)) == []


def test_the_next_chunk_is_read_while_the_caller_works_on_this_one() -> None:
    started: list[int] = []
    second_read = threading.Event()

    def read(chunk: int) -> int:
        started.append(chunk)
        if chunk == 2:
            second_read.set()
        return chunk

    for chunk, _ in read_ahead([1, 2, 3], read):
        if chunk == 1:  # the caller holds chunk 1: chunk 2's read goes on meanwhile, chunk 3's not yet
            assert second_read.wait(5)
            assert started == [1, 2]


def test_a_failed_read_is_raised_at_its_chunk() -> None:
    def read(chunk: int) -> int:
        if chunk == 2:
            raise ValueError("bad chunk 2")
        return chunk

    got: list[tuple[int, int]] = []

    def take_all() -> None:
        for chunk, value in read_ahead([1, 2, 3], read):
            got.append((chunk, value))

    with pytest.raises(ValueError, match="bad chunk 2"):
        take_all()
    assert got == [(1, 1)]
