"""Benchmark of the call engine against the fake OpenAI-compatible server (real HTTP, separate process).

    python benchmarks/engine.py                 # the full set (about a minute)
    python benchmarks/engine.py --calls 500     # quicker
    python benchmarks/engine.py --only throughput --calls 3000 --concurrency 256   # one row
    python benchmarks/engine.py --only reference --calls 3000 --reference-concurrency 256

1. Throughput: N calls at concurrency 8, 32, 128 with 100 ms server latency. The bound is
   concurrency / latency calls per second; the figure is achieved / bound (aim: >= 0.85 at 32,
   >= 0.7 at 128 on a 2-core machine), plus CPU milliseconds per call in the client process and
   in the server process.
2. Faults: the same at concurrency 32 with 10% 429 (Retry-After 0.1 s) and 2% 500: every call must
   end as a completion or a failure record, with retries bounded by max_retries per call.
3. Cache: N calls with a store, then the same N again: the second run must make zero HTTP requests
   and be at least 50x faster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from livemed.config import Config, ModelConfig  # noqa: E402
from livemed.models import CallFailure, Completion, Engine, Message, Settings, get_model  # noqa: E402
from livemed.store import Store  # noqa: E402

KEY_ENV = "LIVEMED_BENCH_KEY"
MODEL = "openai/fake-gpt"
MAX_RETRIES = 4


class Server:
    """The fake server in its own process (so that it does not share the client's CPU time)."""

    def __init__(self, latency: float, rate_429: float = 0.0, rate_500: float = 0.0) -> None:
        command = [sys.executable, "-m", "tests.fakes.openai_server", "--latency", str(latency)]
        command += ["--rate-429", str(rate_429), "--rate-500", str(rate_500), "--retry-after", "0.1"]
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().split()[1]

    def stats(self) -> int:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/_stats") as response:
            return int(json.load(response)["requests"])

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@dataclass
class Outcome:
    wall_s: float
    cpu_s: float
    server_cpu_s: float
    completions: int
    failures: int
    requests: int
    retries: int


async def run_calls(server: Server, calls: int, concurrency: int, store: Store | None, tag: str) -> Outcome:
    config = Config(
        models={
            MODEL: ModelConfig(
                base_url=server.base_url,
                api_key_env=KEY_ENV,
                max_concurrency=concurrency,
                max_retries=MAX_RETRIES,
                timeout_s=30,
            )
        }
    )
    model = get_model(MODEL, config=config)
    questions: list[list[Message]] = [
        [{"role": "user", "content": f"{tag} question {i}"}] for i in range(calls)
    ]
    async with Engine(store=store, config=config, cache="on" if store else "off") as engine:
        # warm up: open as many keep-alive connections as there will be calls in flight
        warm: list[list[Message]] = [[{"role": "user", "content": f"warm {i}"}] for i in range(concurrency)]
        await asyncio.gather(*(engine.generate(model, q) for q in warm))
        before_requests, before_server = server.stats(), server.cpu_s()
        before_retries = engine.accounting.totals().retries
        wall, cpu = time.perf_counter(), time.process_time()
        results = await asyncio.gather(*(engine.generate(model, q) for q in questions))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return Outcome(
        wall_s=wall,
        cpu_s=cpu,
        server_cpu_s=server.cpu_s() - before_server,
        completions=sum(isinstance(r, Completion) for r in results),
        failures=sum(isinstance(r, CallFailure) for r in results),
        requests=server.stats() - before_requests,
        retries=engine.accounting.totals().retries - before_retries,
    )


THROUGHPUT_CONCURRENCY = (8, 32, 128)  # `--concurrency` sets others


def throughput(calls: int, latency: float, concurrencies: tuple[int, ...] = THROUGHPUT_CONCURRENCY) -> None:
    server = Server(latency)
    try:
        print(f"## throughput: {calls} calls, {latency * 1000:.0f} ms latency")
        print("concurrency | calls/s | bound | achieved/bound | client CPU ms/call | server CPU ms/call")
        for concurrency in concurrencies:
            out = asyncio.run(run_calls(server, calls, concurrency, None, f"c{concurrency}"))
            rate, bound = calls / out.wall_s, concurrency / latency
            print(
                f"{concurrency:11d} | {rate:7.0f} | {bound:5.0f} | {rate / bound:14.2f} | "
                f"{out.cpu_s / calls * 1000:18.2f} | {out.server_cpu_s / calls * 1000:.2f}"
            )
    finally:
        server.stop()


async def bare_calls(server: Server, calls: int, concurrency: int) -> float:
    """The machine's ceiling: the same requests from a bare aiohttp client (no openai client, no engine)."""
    import aiohttp

    url = server.base_url + "/chat/completions"
    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(i: int) -> None:
            async with (
                gate,
                session.post(
                    url, json={"model": "fake-gpt", "messages": [{"role": "user", "content": str(i)}]}
                ) as r,
            ):
                await r.json()

        await asyncio.gather(*(one(i) for i in range(concurrency)))
        wall = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        return time.perf_counter() - wall


async def client_only_calls(server: Server, calls: int, concurrency: int) -> float:
    """The same requests through the openai client alone (as livemed configures it), without the engine."""
    model = get_model(
        MODEL, config=Config(models={MODEL: ModelConfig(base_url=server.base_url, api_key_env=KEY_ENV)})
    )
    gate = asyncio.Semaphore(concurrency)
    settings = Settings()

    async def one(i: int) -> None:
        async with gate:
            await model.generate([{"role": "user", "content": str(i)}], settings=settings)

    await asyncio.gather(*(one(i) for i in range(concurrency)))
    wall = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall = time.perf_counter() - wall
    await model.aclose()  # type: ignore[attr-defined]
    return wall


REFERENCE_CONCURRENCY = (32, 128)  # `--reference-concurrency` sets others


def reference(calls: int, latency: float, concurrencies: tuple[int, ...] = REFERENCE_CONCURRENCY) -> None:
    server = Server(latency)
    try:
        print("## reference: a bare aiohttp client, and the openai client without the engine, same server")
        for concurrency in concurrencies:
            bound = concurrency / latency
            cpu, server_cpu = time.process_time(), server.cpu_s()  # the warm-up round included
            bare = calls / asyncio.run(bare_calls(server, calls, concurrency)) / bound
            cpu, server_cpu = time.process_time() - cpu, server.cpu_s() - server_cpu
            client = calls / asyncio.run(client_only_calls(server, calls, concurrency)) / bound
            sent = calls + concurrency
            print(
                f"concurrency {concurrency}: bare aiohttp {bare:.2f} of the bound "
                f"(client {1000 * cpu / sent:.2f}, server {1000 * server_cpu / sent:.2f} CPU ms/call), "
                f"openai client {client:.2f}"
            )
    finally:
        server.stop()


def faults(calls: int, latency: float) -> None:
    server = Server(latency, rate_429=0.10, rate_500=0.02)
    try:
        out = asyncio.run(run_calls(server, calls, 32, None, "faults"))
    finally:
        server.stop()
    ended = out.completions + out.failures
    most = calls * (MAX_RETRIES + 1)
    rate, bound = calls / out.wall_s, 32 / latency
    print("## faults: concurrency 32, 10% 429 (Retry-After 0.1 s), 2% 500")
    print(
        f"calls {calls}: {out.completions} completions + {out.failures} failure records = {ended} "
        f"({'all ended' if ended == calls else 'MISSING RESULTS'}); HTTP requests {out.requests}, "
        f"retries {out.retries} ({out.retries / calls:.3f} per call, at most {MAX_RETRIES}: "
        f"{'within' if out.requests <= most else 'BEYOND'} the bound of {most} requests); "
        f"{rate:.0f} calls/s = {rate / bound:.2f} of the fault-free bound"
    )


def cached(calls: int, latency: float) -> None:
    server = Server(latency)
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = Store(Path(folder) / "bench.db")
            first = asyncio.run(run_calls(server, calls, 32, store, "cache"))
            second = asyncio.run(run_calls(server, calls, 32, store, "cache"))
            store.close()
    finally:
        server.stop()
    print("## cache: the same calls twice at concurrency 32, with a store")
    print(
        f"first run {first.wall_s:.2f} s ({first.requests} HTTP requests); second run {second.wall_s:.3f} s "
        f"({second.requests} HTTP requests, {second.cpu_s / calls * 1000:.3f} CPU ms/call): "
        f"{first.wall_s / second.wall_s:.0f}x faster"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the model call engine.")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--only", choices=["throughput", "reference", "faults", "cache"])
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=list(THROUGHPUT_CONCURRENCY), help="throughput's"
    )
    parser.add_argument(
        "--reference-concurrency",
        type=int,
        nargs="+",
        default=list(REFERENCE_CONCURRENCY),
        help="reference's",
    )
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    steps = (("faults", faults), ("cache", cached))
    if args.only in (None, "throughput"):
        throughput(args.calls, args.latency, tuple(args.concurrency))
    if args.only in (None, "reference"):
        reference(args.calls, args.latency, tuple(args.reference_concurrency))
    for name, step in steps:
        if args.only in (None, name):
            step(args.calls, args.latency)


if __name__ == "__main__":
    main()
