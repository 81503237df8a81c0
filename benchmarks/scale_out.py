"""Scale-out: 1, 2 and 4 `livemed eval` workers on one PostgreSQL store, and a local 2-worker Ray cluster.

The model-bound part of a live week: N generated HealthBench-format cases (5 rubric items each: one
candidate call and five grader calls per case) already imported into a fresh PostgreSQL database, then
answered and graded by W processes of the installed `livemed eval` started together (or one
`livemed eval --executor ray` with `[executor] workers = 2` on a local Ray instance), against
`tests/fakes/openai_server.py --judge` in its own process with a fixed latency (default 200 ms). Each
worker has `max_concurrency` calls in flight per model.

Printed per configuration (median and range over `--repeat` runs): wall time of the workers (process
start to the last exit); the model span (the server's first request to its last reply: the answer and
grade stages without start-up, imports and scoring) and calls per second over each; calls the server
received and records written (answers + grades: equal when
no call was repeated); throughput; the model-wait share (1 - worker CPU / (workers x wall): how much of
the workers' time went to waiting on the model, the rest being livemed's CPU); client CPU ms per call;
and, from the single worker's figures, the per-call costs behind the 10-node estimate in
docs/scale-out.md. The machine load (`uptime`) is printed before and after: the machine is shared.

    .venv/bin/python benchmarks/scale_out.py [--cases 200] [--latency 0.2] [--concurrency 16]
        [--workers 1 2 4] [--ray] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from eval_throughput import CANDIDATE, CRITERIA, JUDGE, KEY_ENV, workload
from fake_server import Server
from livemed.records import Answer, Grade
from livemed.store import Store, resolve_url

PROGRAM = Path(sys.executable).with_name("livemed")
DEFAULT_PG = "postgresql+psycopg://livemed@127.0.0.1:55432/postgres"


@dataclass
class Measured:
    wall_s: float
    calls: int
    records: int
    cpu_s: float
    workers: int
    span_s: float  # the server's first request to its last reply: the model-bound part alone

    @property
    def wait_share(self) -> float:
        return max(0.0, 1 - self.cpu_s / (self.workers * self.wall_s))


def fresh_database(base: str) -> tuple[str, sa.Engine, str]:
    name = f"livemed_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(resolve_url(base), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(resolve_url(base)).set(database=name).render_as_string(hide_password=False)
    return url, admin, name


def project(folder: Path, store: str, url: str, concurrency: int, ray_workers: int) -> Path:
    lines = [f"store = {json.dumps(store)}"]
    for model in (CANDIDATE, JUDGE):
        lines += [
            f'[models."{model}"]',
            f'base_url = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            f"max_concurrency = {concurrency}",
            "max_retries = 0",
            f'[prices."{model}"]',
            "input = 0.15",
            "output = 0.6",
        ]
    lines += ["[executor]", f"workers = {ray_workers}"]
    config = folder / "livemed.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def livemed(config: Path, *argv: str) -> list[str]:
    return [str(PROGRAM), "--config", str(config), *argv]


def one_run(base: str, server: Server, args: argparse.Namespace, workers: int, ray: bool) -> Measured:
    url, admin, name = fresh_database(base)
    env = {**os.environ, KEY_ENV: "sk-bench-not-real", "COLUMNS": "200"}
    try:
        with tempfile.TemporaryDirectory(prefix="livemed-scale-") as tmp:
            folder = Path(tmp)
            config = project(folder, url, server.base_url, args.concurrency, workers)
            data = workload(folder / "hb.jsonl", args.cases)
            subprocess.run(
                livemed(config, "import-healthbench", str(data)), env=env, check=True, capture_output=True
            )
            server.reset()
            command = livemed(config, "eval", "-m", CANDIDATE, "--judge", JUDGE)
            if ray:
                command += ["--executor", "ray"]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            processes = [
                subprocess.Popen(
                    command, env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                )
                for _ in range(1 if ray else workers)
            ]
            outputs = [p.communicate(timeout=1800) for p in processes]
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            for process, (out, err) in zip(processes, outputs, strict=True):
                if process.returncode != 0:
                    raise SystemExit(f"a worker failed ({process.returncode}): {(err or out)[-600:]}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            if ray:  # the workers are Ray's processes: their CPU is in the driver's report
                cpu += sum(float(m) for m in re.findall(r", ([0-9.]+) s CPU,", outputs[0][0]))
            with Store(url) as store:
                records = sum(1 for _ in store.iter(Answer)) + sum(1 for _ in store.iter(Grade))
            stats = server.stats()
            span = float(stats["last_done_at"]) - float(stats["first_at"])
            return Measured(wall, int(stats["requests"]), records, cpu, workers, span)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}–{format(max(values), fmt)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--ray", action="store_true", help="also a local 2-worker Ray cluster")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("LIVEMED_TEST_POSTGRES_URL", DEFAULT_PG))
    args = parser.parse_args()
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(
        f"cores: {os.cpu_count()}; cases: {args.cases} ({args.cases * (1 + CRITERIA)} calls); "
        f"latency {args.latency * 1000:.0f} ms; max_concurrency {args.concurrency} per model and worker"
    )
    configs = [(f"postgres x{w}", w, False) for w in args.workers] + (
        [("ray x2 (local)", 2, True)] if args.ray else []
    )
    server = Server(args.latency)
    single: list[Measured] = []
    try:
        for label, workers, ray in configs:
            runs = [one_run(args.postgres, server, args, workers, ray) for _ in range(args.repeat)]
            if workers == 1 and not ray:
                single = runs
            bound = (1 + CRITERIA) / CRITERIA * workers * args.concurrency / args.latency  # grader-bound
            repeats = [r.calls - r.records for r in runs]
            print(
                f"{label:16} wall {spread([r.wall_s for r in runs], '.1f')} s; "
                f"calls {runs[0].calls} for {runs[0].records} records (repeats {max(repeats)}); "
                f"{spread([r.calls / r.wall_s for r in runs], '.0f')} calls/s over the wall, "
                f"{spread([r.calls / r.span_s for r in runs], '.0f')} over the model span "
                f"{spread([r.span_s for r in runs], '.1f')} s "
                f"(bound {bound:.0f}: grader calls at workers x concurrency / latency); "
                f"model-wait share {spread([r.wait_share for r in runs], '.2f')}; "
                f"CPU {spread([1000 * r.cpu_s / r.calls for r in runs], '.1f')} ms/call",
                flush=True,
            )
    finally:
        server.stop()
    if single:
        cpu_ms = statistics.median(1000 * r.cpu_s / r.calls for r in single)
        print(
            f"per call, one worker: {cpu_ms:.1f} ms of client CPU (whole process: start-up, claims, writes, "
            f"scoring); one core keeps at most {1000 / cpu_ms:.0f} calls/s busy at any latency"
        )
    print("load after:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
