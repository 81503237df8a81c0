"""`livemed eval` throughput against the local fake server, and the four separate commands for comparison.

A generated HealthBench-format workload (N examples, 5 rubric items each: 1 candidate call + 5 grader
calls per example) is evaluated by the installed `livemed` program, as a user runs it, in a fresh
project folder per run (a new SQLite store, so nothing is cached), against
`tests/fakes/openai_server.py --judge` in its own process with a fixed latency. Candidate and grader
are two model ids on that one endpoint, both at `max_concurrency` = the concurrency under test.

Printed per run: requests (counted by the server), req/s over the answer+grade part (the server's
first request to its last reply), the bound (min(concurrency ÷ latency, the workload's dependency
limit: requests ÷ (2 × latency), an answer then its grades)) and achieved ÷ bound, the most requests
in flight at the server, client CPU ms per request (user + sys of the livemed process(es), all of
it: start-up, import, scoring included), client peak RSS, time from process start to the first
request, and end-to-end wall. `separate` runs `import-healthbench`, `answer`, `grade`, `scores`
one after the other (req/s over answer+grade from the first request to the last reply, as above).

    .venv/bin/python benchmarks/eval_throughput.py [--n 200 1000] [--latency 0 0.1 0.5]
        [--concurrency 64 256 512] [--repeat 3] [--separate]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_server import Server

REPO = Path(__file__).resolve().parent.parent
PROGRAM = Path(sys.executable).with_name("livemed")
KEY_ENV = "LIVEMED_BENCH_KEY"
CRITERIA = 5
CANDIDATE, JUDGE = "openai/bench-candidate", "openai/bench-judge"


def workload(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            items = [
                {"criterion": f"Advises item {k} for case {i}", "points": k + 1, "tags": ["axis:accuracy"]}
                for k in range(CRITERIA - 1)
            ] + [
                {
                    "criterion": "Recommends antibiotics without indication",
                    "points": -5,
                    "tags": ["axis:safety"],
                }
            ]
            prompt = [
                {"role": "user", "content": f"I have had a cough for {i % 20 + 1} days (case {i}). Advice?"}
            ]
            line = {
                "prompt_id": f"bench-{i}",
                "prompt": prompt,
                "rubrics": items,
                "example_tags": ["theme:x"],
            }
            handle.write(json.dumps(line) + "\n")
    return path


def project(folder: Path, base_url: str, concurrency: int) -> Path:
    lines = ['store = "livemed.db"']
    for model in (CANDIDATE, JUDGE):
        lines += [f'[models."{model}"]', f'base_url = "{base_url}"', f'api_key_env = "{KEY_ENV}"']
        lines += [f"max_concurrency = {concurrency}", "timeout_s = 120"]
    config = folder / "livemed.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


@dataclass
class Step:
    wall_s: float
    cpu_s: float
    rss_mb: float
    started: float  # time.monotonic() just before the process started


def run(config: Path, *argv: str) -> Step:
    env = {**os.environ, KEY_ENV: "sk-bench", "COLUMNS": "160"}
    started = time.monotonic()
    process = subprocess.Popen(
        [str(PROGRAM), "--config", str(config), *argv],
        cwd=config.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        assert process.stderr is not None
        raise SystemExit(f"livemed {' '.join(argv)} failed: {process.stderr.read().decode()[-2000:]}")
    return Step(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, started)


def measure(server: Server, data: Path, concurrency: int, latency: float, separate: bool) -> dict[str, Any]:
    server.reset()
    with tempfile.TemporaryDirectory(prefix="livemed-eval-bench-") as tmp:
        config = project(Path(tmp), server.base_url, concurrency)
        published = ["--published", "2025-01-01"]
        if separate:
            steps = [
                run(config, "import-healthbench", str(data), *published),
                run(config, "answer", "-m", CANDIDATE),
                run(config, "grade", "--judge", JUDGE),
                run(config, "scores", "--judge", JUDGE, "--convention", "healthbench"),
            ]
        else:
            steps = [run(config, "eval", str(data), "-m", CANDIDATE, "--judge", JUDGE, *published)]
    stats = server.stats()
    requests = int(stats["requests"])
    calls_s = stats["last_done_at"] - stats["first_at"]
    bound = min(concurrency / latency, requests / (2 * latency)) if latency else None
    rate = requests / calls_s
    cpu = sum(s.cpu_s for s in steps)
    first_step = steps[1] if separate else steps[0]
    return {
        "requests": requests,
        "req_s": rate,
        "bound": bound,
        "of_bound": rate / bound if bound else None,
        "max_in_flight": stats["max_in_flight"],
        "cpu_ms_per_request": 1000 * cpu / requests,
        "peak_rss_mb": max(s.rss_mb for s in steps),
        "first_request_s": stats["first_at"] - first_step.started,
        "wall_s": sum(s.wall_s for s in steps),
    }


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{statistics.median(values):.3g} [{min(values):.3g}–{max(values):.3g}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 0.1, 0.5])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256, 512])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--separate", action="store_true", help="also the four separate commands")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} CPUs")
    keys = (
        "req_s",
        "of_bound",
        "max_in_flight",
        "cpu_ms_per_request",
        "peak_rss_mb",
        "first_request_s",
        "wall_s",
    )
    print("| how | N | latency | concurrency | requests | " + " | ".join(keys) + " |")
    print("|" + " --- |" * (5 + len(keys)))
    with tempfile.TemporaryDirectory() as tmp:
        for latency in args.latency:
            server = Server(latency)
            try:
                for n in args.n:
                    data = workload(Path(tmp) / f"hb-{n}.jsonl", n)
                    for concurrency in args.concurrency:
                        for how in ("eval", "separate") if args.separate else ("eval",):
                            runs = [
                                measure(server, data, concurrency, latency, how == "separate")
                                for _ in range(args.repeat)
                            ]
                            cells = [
                                "—" if runs[0][k] is None else spread([float(r[k]) for r in runs])
                                for k in keys
                            ]
                            row = [
                                how,
                                str(n),
                                f"{latency * 1000:.0f} ms",
                                str(concurrency),
                                str(runs[0]["requests"]),
                            ]
                            print("| " + " | ".join(row + cells) + " |", flush=True)
            finally:
                server.stop()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    main()
