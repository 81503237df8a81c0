"""Judge validation at scale: building pairs from the real datasets, and `livemed judges run` against
the local fake server.

build: for PubMedQA, MedCalc-Bench and MedQA from ../shared/data (or $LIVEMED_SHARED_DATA), each run
in a fresh process: load → mutate → rank → pair → write to a fresh SQLite store (what `judges build`
does); prints items, candidates, pairs, seconds, pairs/s and the process's peak RSS. Aim: all three in
under a minute, memory bounded by streaming.

run: `livemed judges run` (the installed program, in a fresh project folder) on the MedQA pairs against
`tests/fakes/openai_server.py --text '<think>…</think><answer>[[A]]</answer>'` with a fixed latency;
the judge model has `max_concurrency` = the concurrency under test. Prints calls (counted by the
server), calls/s from the server's first request to its last reply, the bound (concurrency ÷ latency)
and achieved ÷ bound, the CPU ceiling (cores ÷ (the client's CPU a call over the calls, sampled as
`eval_throughput.py` does, + the server's)) and achieved ÷ min(bound, ceiling), the most requests in
flight at the server, the time from the process's start to the first request, and wall. Aim: ≥ 0.85
of min(bound, ceiling) at 256 (issue 35).

    .venv/bin/python benchmarks/judge_pairs.py [--part build run] [--repeat 3] [--latency 0.1 0.5]
        [--concurrency 256]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fake_server import Server
from processes import CORES, Step, cpu_between, timed_process

REPO = Path(__file__).resolve().parent.parent
PROGRAM = Path(sys.executable).with_name("livemed")
DATA = Path(os.environ.get("LIVEMED_SHARED_DATA", REPO.parent / "shared" / "data"))
SETS = {"pubmedqa": "pubmedqa", "medcalc": "medcalc_bench", "medqa": "medqa"}
KEY_ENV = "LIVEMED_BENCH_KEY"
JUDGE = "openai/bench-judge"
VERDICT = "<think>A follows the instructions.</think><answer>[[A]]</answer>"


def build_once(name: str) -> dict[str, Any]:
    """One dataset, in this process (run it in a fresh one): items → pairs → a fresh SQLite store."""
    from livemed.judges.datasets import dataset
    from livemed.judges.pairs import build_pairs
    from livemed.store import Store

    info, stats = dataset(name), Counter[str]()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s.db") as store:
        start = time.perf_counter()
        items = (i for i in info.load(DATA / SETS[name]) if not isinstance(i, Exception))
        store.put(build_pairs(items, 0, info.licence, stats))  # type: ignore[arg-type]
        seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {**stats, "seconds": seconds, "pairs_s": stats["pairs"] / seconds, "peak_rss_mb": rss}


def build(repeat: int) -> None:
    totals = []
    for name in SETS:
        runs = []
        for _ in range(repeat):
            out = subprocess.run(
                [sys.executable, __file__, "--one", name],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO,
            )
            runs.append(json.loads(out.stdout))
        secs = [r["seconds"] for r in runs]
        r = runs[0]
        totals.append(statistics.median(secs))
        print(
            f"{name:>9}: {r['items']} items, {r['candidates']} candidates, {r['pairs']} pairs; "
            f"{statistics.median(secs):.2f} s median (min {min(secs):.2f}, max {max(secs):.2f}); "
            f"{statistics.median(x['pairs_s'] for x in runs):,.0f} pairs/s; "
            f"peak RSS {max(x['peak_rss_mb'] for x in runs):.0f} MB"
        )
    print(f"all three: {sum(totals):.1f} s (medians summed; aim < 60 s)")


class VerdictServer(Server):
    """The fake server answering every prompt with one compliant pairwise verdict."""

    def __init__(self, latency: float) -> None:
        command = [
            sys.executable,
            "-m",
            "tests.fakes.openai_server",
            "--text",
            VERDICT,
            "--latency",
            str(latency),
        ]
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().split()[1]


def livemed(config: Path, *argv: str) -> Step:
    return timed_process([str(PROGRAM), "--config", str(config), *argv], config.parent, {KEY_ENV: "sk-bench"})


def run_once(server: VerdictServer, concurrency: int, latency: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="livemed-judges-bench-") as tmp:
        config = Path(tmp) / "livemed.toml"
        config.write_text(
            f'store = "livemed.db"\n[models."{JUDGE}"]\nbase_url = "{server.base_url}"\n'
            f'api_key_env = "{KEY_ENV}"\nmax_concurrency = {concurrency}\ntimeout_s = 120\n',
            encoding="utf-8",
        )
        livemed(config, "judges", "build", "--dataset", "medqa", "--path", str(DATA / "medqa"))
        server.reset()
        server_cpu = server.cpu_s()
        step = livemed(config, "judges", "run", "--judge", JUDGE, "--samples", "1")
        server_cpu = server.cpu_s() - server_cpu
    stats = server.stats()
    calls = int(stats["requests"])
    rate = calls / (stats["last_done_at"] - stats["first_at"])
    bound = concurrency / latency
    calls_cpu = cpu_between(step, stats["first_at"], stats["last_done_at"])
    ceiling = CORES * calls / (calls_cpu + server_cpu)  # calls/s the cores serve at these costs
    return {
        "calls": calls,
        "calls_s": rate,
        "bound": bound,
        "of_bound": rate / bound,
        "ceiling": ceiling,
        "of_limit": rate / min(bound, ceiling),
        "client_ms": 1000 * calls_cpu / calls,
        "server_ms": 1000 * server_cpu / calls,
        "max_in_flight": stats["max_in_flight"],
        "first_request_s": stats["first_at"] - step.started,
        "wall_s": step.wall_s,
    }


def run(repeat: int, concurrency: list[int], latencies: list[float]) -> None:
    for latency in latencies:
        server = VerdictServer(latency)
        try:
            for c in concurrency:
                runs = [run_once(server, c, latency) for _ in range(repeat)]
                print(
                    f"judges run @ {c}, {latency * 1000:.0f} ms: {runs[0]['calls']} calls, "
                    f"{spread(runs, 'calls_s', '{:,.0f}')} calls/s; bound {runs[0]['bound']:,.0f}; "
                    f"{spread(runs, 'of_bound')} of bound; CPU ceiling {spread(runs, 'ceiling', '{:,.0f}')} "
                    f"(client {spread(runs, 'client_ms', '{:.3f}')} ms a call over the calls, server "
                    f"{spread(runs, 'server_ms', '{:.3f}')}); {spread(runs, 'of_limit')} of min(bound, "
                    f"ceiling); max in flight {max(r['max_in_flight'] for r in runs)}; first request "
                    f"{spread(runs, 'first_request_s')} s; wall {spread(runs, 'wall_s', '{:.1f}')} s",
                    flush=True,
                )
        finally:
            server.stop()


def spread(runs: list[dict[str, Any]], key: str, fmt: str = "{:.2f}") -> str:
    """The median [min–max] of one figure over the runs."""
    values = [r[key] for r in runs]
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--part", nargs="+", default=["build", "run"], choices=["build", "run"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency", type=float, nargs="+", default=[0.1])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[256])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(build_once(args.one)))
        return
    print(
        f"machine load (uptime): {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"
    )
    if "build" in args.part:
        build(args.repeat)
    if "run" in args.part:
        run(args.repeat, args.concurrency, args.latency)
    print(f"machine load after (uptime): {uptime()}")


if __name__ == "__main__":
    main()
