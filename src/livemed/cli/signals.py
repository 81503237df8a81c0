"""SIGTERM ends a command like Ctrl-C does: the work unwinds, buffered cache entries are written.

`install()` (called by `make_engine`) makes SIGTERM raise `Terminated`, a `KeyboardInterrupt`, in
the main thread: `track_run` records the run as interrupted, `usage_on_failure` prints the usage and
writes the response cache, and `livemed.cli.main` exits with the conventional status 143
(128 + SIGTERM). SIGINT keeps Python's own handler (KeyboardInterrupt, exit 1 through click).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

SIGTERM_EXIT = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


_received: list[int] = []


def _on_sigterm(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated(f"terminated by signal {signum}")


def install() -> None:
    """Make SIGTERM raise `Terminated` (main thread only; a handler someone else set is kept)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm)


def terminated() -> bool:
    """Whether SIGTERM arrived in this process."""
    return bool(_received)
