"""Reading the next chunk while this one is worked on.

A loop over chunks that reads each from the database and then works on it in Python waits for the
database half the time: the two take turns. `read_ahead` reads chunk k + 1 in a thread of its own while
the caller works on chunk k; a database driver waits with the GIL released (psycopg for the server's
reply, sqlite3 while SQLite runs), so the wait and the work overlap on two cores. One chunk ahead at
most: memory holds two chunks' reads, whatever the number of chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def read_ahead(chunks: Iterable[T], read: Callable[[T], R]) -> Iterator[tuple[T, R]]:
    """Each chunk with `read(chunk)`, in order; `read` runs in one worker thread, one chunk ahead of
    the caller. An exception of `read` is raised where its chunk would have been yielded; a caller
    that stops early leaves at most one read to finish."""
    with ThreadPoolExecutor(1, thread_name_prefix="livemed-read-ahead") as pool:
        pending: tuple[T, Future[R]] | None = None
        for chunk in chunks:
            ahead = (chunk, pool.submit(read, chunk))
            if pending is not None:
                yield pending[0], pending[1].result()
            pending = ahead
        if pending is not None:
            yield pending[0], pending[1].result()


__all__ = ["read_ahead"]
