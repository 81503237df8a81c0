"""A benchmarked process, as `eval_throughput.py`, `judge_pairs.py` and `startup.py` time one: wall, CPU
(all of it, and between two moments, sampled every 20 ms from /proc), peak RSS, and when it started
(time.monotonic(), the clock the fake server stamps its requests with)."""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Step:
    wall_s: float
    cpu_s: float
    rss_mb: float
    started: float  # time.monotonic() just before the process started
    samples: list[tuple[float, float]]  # (time.monotonic(), CPU s so far), from start to exit


def timed_process(argv: list[str], cwd: Path, env: dict[str, str]) -> Step:
    """Run `argv` to its end (stdout dropped); a non-zero exit stops the benchmark with its stderr."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "160", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    samples = [(started, 0.0)]
    sampler = threading.Thread(target=_sample_cpu, args=(process.pid, samples), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        assert process.stderr is not None
        raise SystemExit(f"{' '.join(argv[:4])} failed: {process.stderr.read().decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    samples.append((started + wall, cpu))
    return Step(wall, cpu, usage.ru_maxrss / 1024, started, samples)


def _sample_cpu(pid: int, samples: list[tuple[float, float]]) -> None:
    """(time.monotonic(), process CPU s) every 20 ms while `pid` runs (it is a zombie, then gone, after)."""
    stat = Path(f"/proc/{pid}/stat")
    while True:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return
        if fields[0] == "Z":
            return
        samples.append((time.monotonic(), (int(fields[11]) + int(fields[12])) / TICK))
        time.sleep(0.02)


def cpu_between(step: Step, start: float, end: float) -> float:
    """The step's CPU seconds from `start` to `end` (time.monotonic(), the server's clock too)."""

    def at(t: float) -> float:
        points = step.samples
        t = min(max(t, points[0][0]), points[-1][0])
        for (t0, c0), (t1, c1) in itertools.pairwise(points):
            if t0 <= t <= t1:
                return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        return points[-1][1]

    return max(0.0, at(end) - at(start))
