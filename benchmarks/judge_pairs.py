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
and achieved ÷ bound, the most requests in flight at the server. Aim: ≥ 0.85 of the bound at 256.

    .venv/bin/python benchmarks/judge_pairs.py [--part build run] [--repeat 3] [--latency 0.1]
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


def livemed(config: Path, *argv: str) -> float:
    env = {**os.environ, KEY_ENV: "sk-bench", "COLUMNS": "160"}
    start = time.monotonic()
    subprocess.run(
        [str(PROGRAM), "--config", str(config), *argv],
        cwd=config.parent,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - start


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
        wall = livemed(config, "judges", "run", "--judge", JUDGE, "--samples", "1")
    stats = server.stats()
    calls = int(stats["requests"])
    rate = calls / (stats["last_done_at"] - stats["first_at"])
    bound = concurrency / latency
    return {
        "calls": calls,
        "calls_s": rate,
        "bound": bound,
        "of_bound": rate / bound,
        "max_in_flight": stats["max_in_flight"],
        "wall_s": wall,
    }


def run(repeat: int, concurrency: list[int], latency: float) -> None:
    server = VerdictServer(latency)
    try:
        for c in concurrency:
            runs = [run_once(server, c, latency) for _ in range(repeat)]
            rates = [r["calls_s"] for r in runs]
            print(
                f"judges run @ {c}: {runs[0]['calls']} calls, {statistics.median(rates):,.0f} calls/s median "
                f"(min {min(rates):,.0f}, max {max(rates):,.0f}); bound {runs[0]['bound']:,.0f}; "
                f"{statistics.median(r['of_bound'] for r in runs):.2f} of bound; "
                f"max in flight {max(r['max_in_flight'] for r in runs)}; "
                f"wall {statistics.median(r['wall_s'] for r in runs):.1f} s"
            )
    finally:
        server.stop()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--part", nargs="+", default=["build", "run"], choices=["build", "run"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.1)
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
