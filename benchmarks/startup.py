"""Start-up: how long `livemed` takes before it does anything, and `scores`/`leaderboard`/`grade` ends.

Each figure is a fresh `livemed` process, as a user runs it, measured `--repeat` times (wall and CPU =
user + system of the process, from `os.wait4`):

- `livemed --version`, `livemed --help`;
- `eval FILE`: process start to the first request the local fake server (`tests/fakes/openai_server.py
  --judge`, 100 ms latency) receives, for a generated HealthBench-format file of 200 examples (the
  workload of `benchmarks/eval_throughput.py`), in a fresh project (new SQLite store) each run; and the
  whole run's CPU;
- `scores`, `leaderboard` over ~6,000 and ~100,000 grades, and `grade` again with nothing to do over the
  large store: stores built once with offline models (`import-healthbench` of `benchmarks/scale.py`'s
  workload, `answer -m offline/reference`, `grade --judge offline/lexical`); every `scores` run gets a
  fresh copy of the graded store (so each computes every score), then `scores` again on it (every score
  current: nothing new to compute), `leaderboard` and `grade` run on it after.

`--baseline SRC` also runs another checkout's `src` folder (e.g. an export of main) with this Python
(`PYTHONPATH=SRC`), alternating with this tree run by run, so before and after share the same minutes.
Prints `uptime` first and last: the machine is shared, so wall times swing; CPU is the steadier figure.

    .venv/bin/python benchmarks/startup.py [--repeat 3] [--baseline /tmp/main/src]
        [--small 923] [--large 15385] [--work DIR] [--only version help eval scores]
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
from dataclasses import dataclass
from pathlib import Path

import eval_throughput
import scale
from bytecode import compile_sources  # benchmarks/ is on the path of a script run
from fake_server import Server
from processes import cpu_between, timed_process

REPO = Path(__file__).resolve().parent.parent
MAIN = "from livemed.cli import main; main()"


@dataclass(frozen=True)
class Program:
    label: str
    src: Path | None  # None: this tree (the installed package)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-c", MAIN, *args]

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        env = {**os.environ, "COLUMNS": "160", **extra}
        if self.src is not None:
            env["PYTHONPATH"] = str(self.src)
        return env


@dataclass
class Result:
    wall_s: float
    cpu_s: float
    started: float


def run(program: Program, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Result:
    started = time.monotonic()
    process = subprocess.Popen(
        program.argv(*args),
        cwd=cwd,
        env=program.env(env or {}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(
            f"{program.label}: livemed {' '.join(args)} exited {code}: "
            f"{process.stderr.read().decode()[-1500:]}"
        )
    return Result(wall, usage.ru_utime + usage.ru_stime, started)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}]"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def build(work: Path, examples: int) -> tuple[Path, int]:
    """A graded SQLite store of `examples` scale.py examples (one candidate), built once; its grades."""
    data = scale.workload(work / f"healthbench-{examples}.jsonl", examples)
    grades = sum(6 + (i % 2) for i in range(examples))
    store = work / f"graded-{examples}.db"
    if store.exists():
        return store, grades
    folder = work / f"build-{examples}"
    folder.mkdir(exist_ok=True)
    building = folder / "livemed.db"
    this = Program("build", None)
    env = {"LIVEMED_STORE": str(building)}
    for args in (
        ["import-healthbench", str(data), "--published", "2025-03-01"],
        ["answer", "-m", "offline/reference"],
        ["grade", "--judge", "offline/lexical"],
    ):
        took = run(this, args, folder, env)
        print(
            f"  built {examples} examples: {args[0]} {took.wall_s:.1f} s (cpu {took.cpu_s:.1f} s)", flush=True
        )
    shutil.copy(building, store)
    return store, grades


def measure_store(
    programs: list[Program], graded: Path, grades: int, repeat: int, work: Path, regrade: bool
) -> None:
    rows: dict[tuple[str, str], list[Result]] = {}
    for _ in range(repeat):
        for program in programs:
            folder = work / "run"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            store = folder / "livemed.db"
            shutil.copy(graded, store)
            env = {"LIVEMED_STORE": str(store)}
            steps = [("scores", ["scores", "--judge", "offline/lexical"])]
            steps.append(("scores again, nothing new", ["scores", "--judge", "offline/lexical"]))
            steps.append(("leaderboard", ["leaderboard", "--judge", "offline/lexical"]))
            if regrade:
                steps.append(("grade, nothing to do", ["grade", "--judge", "offline/lexical"]))
            for name, args in steps:
                rows.setdefault((name, program.label), []).append(run(program, args, folder, env))
    for (name, label), results in rows.items():
        print(
            f"| {name} over {grades:,} grades | {label} | {spread([r.wall_s for r in results])} | "
            f"{spread([r.cpu_s for r in results])} |",
            flush=True,
        )


def measure_eval(programs: list[Program], repeat: int, work: Path) -> None:
    data = eval_throughput.workload(work / "eval-200.jsonl", 200)
    server = Server(0.1)
    rows: dict[str, list[tuple[float, float, float, float]]] = {}
    try:
        for _ in range(repeat):
            for program in programs:
                server.reset()
                with tempfile.TemporaryDirectory(prefix="livemed-startup-", dir=work) as tmp:
                    config = eval_throughput.project(Path(tmp), server.base_url, 256)
                    args = ["--config", str(config), "eval", str(data)]
                    args += ["-m", eval_throughput.CANDIDATE, "--judge", eval_throughput.JUDGE]
                    args += ["--published", "2025-01-01"]
                    env = {eval_throughput.KEY_ENV: "sk-bench"}
                    if program.src is not None:
                        env["PYTHONPATH"] = str(program.src)
                    took = timed_process(program.argv(*args), Path(tmp), env)  # CPU sampled
                stats = server.stats()
                first = stats["first_at"] - took.started
                first_cpu = cpu_between(took, took.started, stats["first_at"])
                per_request = 1000 * took.cpu_s / stats["requests"]
                rows.setdefault(program.label, []).append((first, first_cpu, took.wall_s, per_request))
    finally:
        server.stop()
    for label, results in rows.items():
        first, first_cpu, wall, cpu = (list(column) for column in zip(*results, strict=True))
        print(
            f"| eval FILE: start to first request (200 examples, 100 ms) | {label} | {spread(first)} | "
            f"{spread(first_cpu)} |\n"
            f"| eval FILE: the whole run (1,200 requests) | {label} | {spread(wall)} | "
            f"{spread(cpu)} ms per request all told |",
            flush=True,
        )


def measure_simple(programs: list[Program], repeat: int, work: Path, only: list[str]) -> None:
    for args in (["--version"], ["--help"]):
        if args[0].removeprefix("--") not in only:
            continue
        rows: dict[str, list[Result]] = {}
        for _ in range(repeat):
            for program in programs:
                rows.setdefault(program.label, []).append(run(program, args, work))
        for label, results in rows.items():
            print(
                f"| livemed {args[0]} | {label} | {spread([r.wall_s for r in results])} | "
                f"{spread([r.cpu_s for r in results])} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, run alternately")
    parser.add_argument("--small", type=int, default=923, help="examples of the ~6,000-grade store")
    parser.add_argument("--large", type=int, default=15385, help="examples of the ~100,000-grade store")
    parser.add_argument("--work", type=Path, help="keep generated stores here (reused by a later run)")
    parser.add_argument("--only", nargs="+", default=["version", "help", "eval", "scores"])
    args = parser.parse_args()
    compile_sources(
        *([args.baseline] if args.baseline else [])
    )  # time the start-up an install has (bytecode.py)
    programs = [Program("this tree", None)]
    if args.baseline is not None:
        programs.insert(0, Program("baseline", args.baseline.resolve()))
    work = args.work or Path(tempfile.mkdtemp(prefix="livemed-startup-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load before: {uptime()}; {os.cpu_count()} CPUs", flush=True)
    print("| what | program | wall s, median [min–max] | CPU s |\n| --- | --- | ---: | ---: |", flush=True)
    if "version" in args.only or "help" in args.only:
        measure_simple(programs, args.repeat, work, args.only)
    if "eval" in args.only:
        measure_eval(programs, args.repeat, work)
    if "scores" in args.only:
        for examples, regrade in ((args.small, False), (args.large, True)):
            graded, grades = build(work, examples)
            measure_store(programs, graded, grades, args.repeat, work, regrade)
    print(f"load after: {uptime()}", flush=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
