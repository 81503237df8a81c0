"""Waiting for a state of another process, never for a length of time.

A test that kills a process once something has happened waits until it can see it has happened (the
store holds the replies, the server has the requests); the deadline only turns a process that never
gets there into a failure instead of a hang.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from livemed.store import Store


def until(
    condition: Callable[[], bool], process: subprocess.Popen[str], what: str, seconds: float = 120
) -> None:
    """Return once `condition()` holds; fail if `process` ends or `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"{what} did not happen: {out}\n{err}")
        time.sleep(0.02)


def cached(store: Path) -> int:
    """How many replies the store's response cache holds (read while another process writes)."""
    with Store(store) as opened:
        return opened.cache_count()
