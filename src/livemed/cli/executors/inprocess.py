"""The in-process executor (the default): a command runs its stages in this process.

`run_worker(program, argv)` runs one `livemed` command line here with its output captured: `program`
is `livemed.cli.application.run` (a command passes down its `AppState.program`; this module imports
nothing of the application, and nothing of Ray). It is what each worker of another executor
(`executors.ray`) runs.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Program = Callable[[list[str]], None]  # `livemed ARGV`: livemed.cli.application.run, which exits


@dataclass(frozen=True)
class WorkerResult:
    """How one worker's command ended."""

    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    host: str
    pid: int
    cpu_s: float = 0.0  # CPU time of this process while the command ran

    @property
    def last_line(self) -> str:
        lines = [line for line in (self.stderr or self.stdout).splitlines() if line.strip()]
        return lines[-1].strip() if lines else f"exit code {self.exit_code}"


def run_worker(program: Program, argv: list[str], cwd: str | None = None) -> WorkerResult:
    """Run `program` (`livemed`) with `argv` in this process (in `cwd` when it exists here) and capture
    what it prints."""
    from livemed.cli.context import piped_columns

    started, cpu = time.perf_counter(), time.process_time()
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(piped_columns())  # 120 columns, as piped output, not this process's consoles
        if cwd is not None and Path(cwd).is_dir():
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            program(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    host, pid = socket.gethostname(), os.getpid()
    return WorkerResult(code, out.getvalue(), err.getvalue(), seconds, host, pid, cpu)


__all__ = ["Program", "WorkerResult", "run_worker"]
