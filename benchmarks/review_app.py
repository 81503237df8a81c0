"""Review app: page times with many reviewers at once on a large store (the issue's bound: p95 < 100 ms
with 50 concurrent reviewers on a 100k-grade store).

Builds a store of about `--grades` verdicts with the real commands (`scale.py`'s HealthBench workload,
`import-healthbench`, `answer` for `offline/reference` and `offline/empty`, `grade --judge
offline/lexical`), or takes `--store`; draws the audit sample (`review sample --size 300`), invites
`--reviewers` reviewers, starts `livemed review serve` in a subprocess, and runs the reviewers at once
(aiohttp, one session each; each opens its link at a seeded moment of the first `--arrive` seconds, all
at the same instant by default) as the app leads them: log in, open the audit queue, then `--rounds` times
open the item, post a verdict, follow the redirect to the next item, and every `--index-every` rounds
open the index (each queue's progress) and the results page. Before each verdict a reviewer pauses
(exponential, mean `--think` seconds, seeded; 0 runs them back to back: a saturated server rather than
reviewers). Every response is timed on its own (redirects
are followed by hand). Prints p50/p95/p99 page time per page and overall, requests, failures, and
p95 ÷ 100 ms, and then the cost of computing `/results` in one process (the first time,
and again after it). Prints `uptime` first and last: the machine is shared.

    .venv/bin/python benchmarks/review_app.py [--grades 100000 | --store PATH] [--reviewers 50]
        [--rounds 10] [--think 1.0] [--index-every 5] [--arrive 0] [--port 8799]
"""

from __future__ import annotations

import argparse
import asyncio
import html
import math
import os
import random
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import aiohttp

from scale import CANDIDATES, JUDGE, PROGRAM, workload  # benchmarks/ is on the path of a script run

CRITERIA_PER_EXAMPLE = 6.5
BOUND_MS = 100.0
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
ITEM = re.compile(r'name="item_id" value="([^"]+)"')
Times = dict[str, list[float]]


def livemed(store: Path, *argv: str) -> str:
    done = subprocess.run(
        [str(PROGRAM), "--store", str(store), *argv], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"livemed {' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


def build(folder: Path, grades: int) -> Path:
    """A store with about `grades` verdicts of offline/lexical on two candidates' answers."""
    store = folder / "review.db"
    examples = math.ceil(grades / (CRITERIA_PER_EXAMPLE * len(CANDIDATES)))
    started = time.monotonic()
    livemed(store, "import-healthbench", str(workload(folder / "hb.jsonl", examples)))
    for model in CANDIDATES:
        livemed(store, "answer", "--model", model)
    livemed(store, "grade", "--judge", JUDGE)
    print(f"built {examples} examples, graded in {time.monotonic() - started:.0f} s", flush=True)
    return store


def invite_all(store: Path, n: int, port: int) -> list[str]:
    links = []
    for i in range(n):
        out = livemed(store, "review", "invite", f"reviewer{i:02d}", "--port", str(port))
        links.append(out.strip().splitlines()[-1])
    return links


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def timed(
    session: aiohttp.ClientSession, page: str, times: Times, method: str, url: str, **kw: object
) -> tuple[int, str, str]:
    """One request, timed; (status, body, Location)."""
    started = time.perf_counter()
    try:
        async with session.request(method, url, allow_redirects=False, **kw) as response:  # type: ignore[arg-type]
            body = await response.text()
            status, location = response.status, response.headers.get("Location", "")
    except aiohttp.ClientError as exc:
        times["failed"].append(0.0)
        return 0, str(exc), ""
    times[page].append((time.perf_counter() - started) * 1000)
    if status >= 400:
        times["failed"].append(0.0)
    return status, body, location


async def reviewer(base: str, link: str, args: argparse.Namespace, seed: int, times: Times) -> None:
    pause = random.Random(seed)  # a reviewer reads before acting: exponential pauses of mean --think s
    think, every = args.think, args.index_every
    jar = aiohttp.CookieJar(unsafe=True)  # the app is on an IP address
    await asyncio.sleep(pause.uniform(0, args.arrive))  # when this reviewer opens the link
    async with aiohttp.ClientSession(base_url=base, cookie_jar=jar) as session:
        await timed(session, "login", times, "GET", link.removeprefix(base))
        status, _, location = await timed(session, "next", times, "GET", "/queue/audit")
        for round_ in range(args.rounds):
            if status != 303:
                return  # nothing left for this reviewer
            _, body, _ = await timed(session, "item", times, "GET", location)
            item, csrf = ITEM.search(body), CSRF.search(body)
            if item is None or csrf is None:
                return
            await asyncio.sleep(pause.expovariate(1 / think) if think else 0)
            form = {
                "csrf": csrf.group(1),
                "queue": "audit",
                "item_id": html.unescape(item.group(1)),
                "verdict": "met",
            }
            _, _, after = await timed(session, "label", times, "POST", "/label", data=form)
            status, _, location = await timed(session, "next", times, "GET", after)
            if every and round_ % every == every - 1:
                await timed(session, "index", times, "GET", "/")
                await timed(session, "results", times, "GET", "/results")


def percentiles(values: list[float]) -> str:
    if len(values) < 2:
        return "n < 2"
    q = statistics.quantiles(values, n=100, method="inclusive")
    return f"p50 {q[49]:6.1f}  p95 {q[94]:6.1f}  p99 {q[98]:6.1f} ms  (n {len(values)})"


def serve(store: Path, port: int) -> subprocess.Popen[str]:
    args = [str(PROGRAM), "--store", str(store), "review", "serve", "--port", str(port), "--judge", JUDGE]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(400):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            if server.poll() is not None:
                sys.exit(f"review serve exited: {server.communicate()[0]}")
            time.sleep(0.05)
    sys.exit("review serve did not start in 20 s")


def report(times: Times, wall: float) -> None:
    pages = [p for p in times if p != "failed"]
    every = [t for p in pages for t in times[p]]
    for page in sorted(pages):
        print(f"  {page:8s} {percentiles(times[page])}")
    print(f"  {'all':8s} {percentiles(every)}")
    print(
        f"requests {len(every) + len(times['failed'])}, failures {len(times['failed'])}, "
        f"{len(every) / wall:.0f} requests/s over {wall:.1f} s"
    )
    if len(every) >= 2:
        p95 = statistics.quantiles(every, n=100, method="inclusive")[94]
        print(f"p95 ÷ 100 ms: {p95 / BOUND_MS:.2f} (bound: < 1)")


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def results_costs(store: Path) -> None:
    """`/results`' computation in one process, after the run's labels: the first (every verdict read) and
    the next ones (the labels' part only; the verdicts' stamp checked each time)."""
    from livemed.review.results import ReviewResults
    from livemed.store import Store

    opened, results = Store(str(store)), ReviewResults()
    started = time.perf_counter()
    results(opened, JUDGE)
    first = time.perf_counter() - started
    again = []
    for _ in range(5):
        started = time.perf_counter()
        results(opened, JUDGE)
        again.append(time.perf_counter() - started)
    opened.close()
    print(
        f"/results in one process: first {first:.2f} s (reads every verdict), then median "
        f"{statistics.median(again) * 1000:.0f} ms, max {max(again) * 1000:.0f} ms (the labels' part)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grades", type=int, default=100_000, help="verdicts in the built store")
    parser.add_argument("--store", type=Path, help="an existing SQLite store graded by offline/lexical")
    parser.add_argument("--reviewers", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--think", type=float, default=1.0, help="mean pause (s) before a reviewer acts; 0: back to back"
    )
    parser.add_argument(
        "--index-every", type=int, default=5, help="open the index and results every N rounds; 0: never"
    )
    parser.add_argument(
        "--arrive",
        type=float,
        default=0.0,
        help="reviewers open their links over this many seconds (0: at once)",
    )
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args()
    print("uptime:", os.getloadavg(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or build(Path(tmp), args.grades)
        port = args.port or free_port()
        print(livemed(store, "review", "sample", "--judge", JUDGE, "--size", "300").splitlines()[0])
        links = invite_all(store, args.reviewers, port)
        server = serve(store, port)
        times: Times = defaultdict(list)
        client, served = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        wall = 0.0
        try:
            started = time.monotonic()
            asyncio.run(_all(f"http://127.0.0.1:{port}", links, args, times))
            wall = time.monotonic() - started
        finally:
            server.send_signal(signal.SIGINT)  # uvicorn shuts down; its worker process is joined
            server.communicate(timeout=30)
        clients = _cpu(resource.getrusage(resource.RUSAGE_SELF)) - _cpu(client)
        servers = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - _cpu(served)
        results_costs(store)
    print(
        f"{args.reviewers} reviewers arriving over {args.arrive} s, {args.rounds} rounds each, "
        f"mean pause {args.think} s, "
        f"index every {args.index_every or 'never'}:"
    )
    report(times, wall)
    print(
        f"CPU: the reviewers (this process) {clients:.1f} s; the server and its worker, start to stop, "
        f"{servers:.1f} s; over {wall:.1f} s of reviewing on {os.cpu_count()} cores"
    )
    print("uptime:", os.getloadavg(), flush=True)


async def _all(base: str, links: list[str], args: argparse.Namespace, times: Times) -> None:
    await asyncio.gather(*(reviewer(base, link, args, i, times) for i, link in enumerate(links)))


if __name__ == "__main__":
    main()
