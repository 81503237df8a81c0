"""`livemed import-healthbench`: examples per second, this checkout against another (e.g. main).

Generates N HealthBench-format examples with `scale.workload` (~6.5 criteria, tags, a theme, an ideal
completion), then, for each size, backend and repeat, runs `livemed import-healthbench` into a fresh
store as its own process, interleaving the checkouts (this one, then each `--against` source folder,
run with the same Python and packages through PYTHONPATH), and a second import of the same file into
the same store (nothing new to write). Prints per run: wall time, CPU time (user + system of the
process and of the worker processes it waited for), peak RSS and examples per wall second; then median
[min–max] per checkout and the ratio of CPU medians. Prints `uptime` first and last: on a loaded
machine compare CPU, not wall.

    .venv/bin/python benchmarks/import_rate.py --sizes 10000 100000 --repeat 3 \
        [--against /work/main/src] [--backends sqlite postgresql] [--workers 0]

PostgreSQL needs LIVEMED_TEST_POSTGRES_URL (a database is created and dropped per run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_sources  # benchmarks/ is on the path of a script run
from scale import Backend, workload  # the workload and the stores every scale benchmark uses

HERE = Path(__file__).resolve().parents[1] / "src"


@dataclass
class Run:
    source: str
    step: str
    wall_s: float
    cpu_s: float
    rss_mib: float


def run_import(source: Path, store: str, data: Path, extra: list[str]) -> Run:
    return _timed(source, store, data, extra, "import")


def _timed(source: Path, store: str, data: Path, extra: list[str], step: str) -> Run:
    env = {**os.environ, "PYTHONPATH": str(source), "LIVEMED_STORE": store, "COLUMNS": "160"}
    argv = [sys.executable, "-c", "from livemed.cli import main; main()"]
    argv += ["import-healthbench", str(data), "--published", "2025-03-01", *extra]
    started = time.monotonic()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{source}: import-healthbench failed: {errors.decode()[-2000:]}")
    return Run(str(source), step, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["sqlite"], choices=["sqlite", "postgresql"])
    parser.add_argument("--against", type=Path, nargs="*", default=[], help="other checkouts' src folders")
    parser.add_argument("--workers", help="pass --workers to this checkout's import (default: its own)")
    args = parser.parse_args()
    compile_sources(*(args.against or []))  # time the start-up an install has (bytecode.py)
    sources = [HERE, *(p.resolve() for p in args.against)]
    print(f"load: {uptime()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="livemed-import-") as tmp:
        for n in args.sizes:
            data = workload(Path(tmp) / f"healthbench-{n}.jsonl", n)
            for backend in args.backends:
                runs: list[Run] = []
                for repeat in range(args.repeat):
                    for source in sources:
                        extra = ["--workers", args.workers] if args.workers and source == HERE else []
                        folder = Path(tmp) / f"{backend}-{n}-{repeat}-{len(runs)}"
                        folder.mkdir()
                        with Backend(backend, folder) as store:
                            first = _timed(source, store, data, extra, "import")
                            again = _timed(source, store, data, extra, "again")
                        runs += [first, again]
                        for r in (first, again):
                            print(
                                f"{backend:10} {n:>7} {r.step:6} {_name(source):28} wall {r.wall_s:7.2f} s  "
                                f"cpu {r.cpu_s:7.2f} s  rss {r.rss_mib:5.0f} MiB  "
                                f"{n / r.wall_s:7.0f} ex/s  {n / r.cpu_s:7.0f} ex/cpu-s",
                                flush=True,
                            )
                _summary(backend, n, sources, runs)
    print(f"load: {uptime()}")


def _name(source: Path) -> str:
    return "this checkout" if source == HERE else str(source)[-28:]


def _summary(backend: str, n: int, sources: list[Path], runs: list[Run]) -> None:
    print(f"\n{backend}, {n:,} examples: median [min–max] over {len(runs) // (2 * len(sources))} runs")
    medians: dict[tuple[str, str], float] = {}
    for step in ("import", "again"):
        for source in sources:
            mine = [r for r in runs if r.source == str(source) and r.step == step]
            walls, cpus = sorted(r.wall_s for r in mine), sorted(r.cpu_s for r in mine)
            medians[(str(source), step)] = statistics.median(cpus)
            wall = statistics.median(walls)
            print(
                f"  {step:6} {_name(source):28} wall {wall:6.2f} [{walls[0]:.2f}–{walls[-1]:.2f}] s"
                f"  cpu {statistics.median(cpus):6.2f} [{cpus[0]:.2f}–{cpus[-1]:.2f}] s"
                f"  {n / wall:6.0f} ex/s  {n / statistics.median(cpus):6.0f} ex/cpu-s"
            )
        for source in sources[1:]:
            ratio = medians[(str(source), step)] / medians[(str(HERE), step)]
            print(f"  {step:6} CPU {_name(source)} / this checkout: {ratio:.2f}×")
    print(flush=True)


if __name__ == "__main__":
    main()
