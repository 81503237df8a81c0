"""`answer`, `grade` and `grade` with nothing to do, by two livemed installs, interleaved (SQLite).

Builds one store of N generated HealthBench examples (`scale.workload`: ~6.5 criteria each) with
this checkout's `livemed`: imported, answered by `offline/reference` and `offline/empty`, graded by
`offline/lexical`, and keeps a copy after each step. Then, `--repeat` times, for each program in
turn (default: this checkout's and /work/main's), on a fresh copy of the store each run:
`answer -m offline/reference` (on the imported store), `grade --judge offline/lexical` (on the
answered store: N × 2 answers, ~13 N grades) and the same `grade` again on the graded store
(nothing to do). Prints wall and CPU (user + system) seconds, peak RSS, grades per second, the
median [min–max] of each, the ratio of each program's median CPU to the first one's, and `uptime`
before and after: the machine is shared, CPU seconds are the figure to compare.

    .venv/bin/python benchmarks/grade_steps.py [--size 10000] [--repeat 3]
        [--programs .venv/bin/livemed /work/main/.venv/bin/livemed]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bytecode import compile_sources  # benchmarks/ is on the path of a script run
from scale import uptime, workload

HERE = Path(sys.executable).with_name("livemed")
STEPS = {
    "answer": ("imported", ["answer", "-m", "offline/reference"]),
    "grade": ("answered", ["grade", "--judge", "offline/lexical"]),
    "grade-again": ("graded", ["grade", "--judge", "offline/lexical"]),
}


def run(program: Path, store: Path, argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one command in its own process."""
    env = {**os.environ, "COLUMNS": "160", "LIVEMED_STORE": str(store)}
    started = time.monotonic()
    process = subprocess.Popen(
        [str(program), *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        assert process.stderr is not None
        raise SystemExit(f"{program} {' '.join(argv)} failed: {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def build(folder: Path, n: int) -> dict[str, Path]:
    """The store after import, after both answers and after grading (copies kept)."""
    data, store = workload(folder / "hb.jsonl", n), folder / "livemed.db"
    copies: dict[str, Path] = {}
    steps = [
        ("imported", ["import-healthbench", str(data), "--published", "2025-03-01"]),
        ("answered", ["answer", "-m", "offline/reference"]),
        ("answered", ["answer", "-m", "offline/empty"]),
        ("graded", ["grade", "--judge", "offline/lexical"]),
    ]
    for name, argv in steps:
        run(HERE, store, argv)
        copies[name] = folder / f"{name}.db"
        shutil.copy(store, copies[name])
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--programs", nargs="+", type=Path, default=[HERE, Path("/work/main/.venv/bin/livemed")]
    )
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=list(STEPS))
    args = parser.parse_args()
    compile_sources()  # time the start-up an install has (bytecode.py)
    n, grades = args.size, sum(6 + (i % 2) for i in range(args.size)) * 2
    print(f"load before: {uptime()}", flush=True)
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="livemed-grade-steps-") as tmp:
        folder = Path(tmp)
        copies = build(folder, n)
        for _ in range(args.repeat):
            for step in args.steps:
                source, argv = STEPS[step]
                for program in args.programs:
                    store = folder / "run.db"
                    shutil.copy(copies[source], store)
                    measured = run(program, store, argv)
                    results.setdefault((step, str(program)), []).append(measured)
                    print(
                        f"  {step:12} {program}: {measured[0]:6.2f} s wall  {measured[1]:6.2f} s CPU  "
                        f"{measured[2]:5.0f} MiB",
                        flush=True,
                    )
    print(f"load after: {uptime()}")
    print(f"\nn={n} examples, {grades} grades · median [min–max] · CPU ratio to {args.programs[0]}")
    for step in args.steps:
        base = statistics.median(c for _, c, _ in results[(step, str(args.programs[0]))])
        for program in args.programs:
            runs = results[(step, str(program))]
            walls, cpus = [w for w, _, _ in runs], [c for _, c, _ in runs]
            rate = f"  {grades / statistics.median(walls):7.0f} grades/s wall" if step == "grade" else ""
            rate += f"  {grades / statistics.median(cpus):7.0f} grades/CPU-s" if step == "grade" else ""
            wall = statistics.median(walls)
            print(
                f"{step:12} {program}: wall {wall:6.2f} [{min(walls):.2f}–{max(walls):.2f}]"
                f"  CPU {statistics.median(cpus):6.2f} [{min(cpus):.2f}–{max(cpus):.2f}]"
                f"  ×{statistics.median(cpus) / base:.2f}  RSS {max(r for _, _, r in runs):5.0f} MiB{rate}"
            )


if __name__ == "__main__":
    main()
