"""A simulated week through `livemed update`: N new documents, harvest → curate → rubrics → answers →
grades → scores, against the local fake model server with a fixed latency.

The week's documents are the bundled demo documents (79, 66 of them curatable), each repeated under new
ids with publication dates spread over the seven days after the cutoff. The duplicate pre-filter is
off for this run (it would rightly reject the repeats); every other pre-filter runs. Curation is the
rule-based `offline/curate-baseline` (BM25 evidence over the demo evidence), rubrics `offline/rules`;
the candidate (`openai/bench-candidate`) and the per-criterion grader (`openai/bench-judge`) are the
fake server (`tests/fakes/openai_server.py --judge`) in its own process, at `--latency` seconds per
call and `max_concurrency` = `--concurrency` each. The installed `livemed` program runs the update, as a
user (or cron) does, in a fresh project folder per run; then a second update checks that nothing is new.

Printed per run: wall time of the update process; per stage (from its `Run` record) the seconds (curate,
rubrics and eval stream, so theirs overlap); model
calls (counted by the server) and the cost livemed recorded; the **model-wait share**: the part of the
update's wall time during which calls to the model were in flight (the server's first request to its
last reply, over the process's wall time); the bound on the model part (calls × latency ÷ concurrency,
with both models' calls overlapping) and the span ÷ that bound; the second update's wall and new work.

Scale-out (issue 17): `--configs` runs the same week on other stores and worker counts, each run in a
fresh database: `sqlite` (the default: one process, a SQLite file), `pgN` (N `livemed update`
processes started together on one fresh PostgreSQL database), `rayN` (one `livemed update --executor
ray` with `[executor] workers = N` on a local Ray instance, same store), `curate` (one process on
PostgreSQL with no candidate or judge: harvest, curation and rubrics alone, for the per-document CPU).
For these it also prints the distinct request bodies the server saw (calls − distinct = calls paid
twice), the records written, the client CPU of all workers, and PostgreSQL's committed transactions
(`pg_stat_database.xact_commit`), and from the `pg1` and `curate` runs the per-item costs behind the
10-node estimate in docs/scale-out.md.

    .venv/bin/python benchmarks/live_week.py [--docs 1000] [--latency 0.2] [--concurrency 64] [--repeat 3]
        [--configs sqlite pg1 pg2 pg4 ray2 curate] [--postgres URL]
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from fake_server import Server
from livemed.demo import demo_docs_path, demo_evidence_path
from livemed.records import Run
from livemed.store import Store, resolve_url

PROGRAM = Path(sys.executable).with_name("livemed")
KEY_ENV = "LIVEMED_BENCH_KEY"
CANDIDATE, JUDGE = "openai/bench-candidate", "openai/bench-judge"
WEEK_START = datetime(2026, 11, 23, tzinfo=UTC)
DEFAULT_PG = "postgresql+psycopg://livemed@127.0.0.1:55432/postgres"
RECORD_KINDS = ("doc", "case", "rubric", "answer", "grade", "grade_failure", "score")


def week_docs(path: Path, n: int) -> Path:
    """`n` documents: the demo documents repeated under new ids, each text marked with its number (so no
    two prompts of the week are the same), dated over one week."""
    demo = [json.loads(line) for line in demo_docs_path().read_text(encoding="utf-8").splitlines() if line]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            doc = dict(demo[i % len(demo)])
            doc["source_id"] = f"{doc['source_id']}-w{i}"
            doc["text"] = f"{doc['text']} What should I do, as post {i} of the week?"  # a question of its own
            doc["url"] = f"https://example.org/livemed-week/{doc['source_id']}"
            doc["published"] = (WEEK_START + timedelta(seconds=i * 7 * 86400 / n)).isoformat()
            handle.write(json.dumps(doc) + "\n")
    return path


@dataclass(frozen=True)
class Setup:
    """One configuration: the store, how many workers, started how."""

    name: str
    workers: int = 1
    postgres: bool = False
    ray: bool = False
    models: bool = True

    @classmethod
    def parse(cls, name: str) -> Setup:
        if name == "sqlite":
            return cls(name)
        if name == "curate":
            return cls(name, postgres=True, models=False)
        found = re.fullmatch(r"(pg|ray)(\d+)", name)
        if not found:
            raise SystemExit(f"--configs: sqlite, curate, pgN or rayN, not {name!r}")
        return cls(name, int(found[2]), postgres=True, ray=found[1] == "ray")


def project(folder: Path, docs: Path, base_url: str, concurrency: int, setup: Setup, store: str) -> Path:
    lines = [
        f"store = {json.dumps(store)}",
        "cutoff = 2026-11-22",
        "[sources.demo]",
        f'path = "{docs}"',
        "[prefilter]",
        'enabled = ["html", "length", "language", "vocabulary"]',
        "[curate]",
        f'evidence = "{demo_evidence_path()}"',
        "[update]",
        'writer = "offline/rules"',
    ]
    if setup.models:
        lines += [f'models = ["{CANDIDATE}"]', f'judge = "{JUDGE}"']
    if setup.ray:
        lines += ["[executor]", f"workers = {setup.workers}"]
    for model in (CANDIDATE, JUDGE):
        lines += [f'[models."{model}"]', f'base_url = "{base_url}"', f'api_key_env = "{KEY_ENV}"']
        lines += [f"max_concurrency = {concurrency}", "timeout_s = 120"]
        lines += [f'[prices."{model}"]', "input = 0.15", "output = 0.6"]
    config = folder / "livemed.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


@dataclass
class Result:
    wall: float
    calls: int
    distinct: int
    cost: float
    share: float
    of_bound: float
    stages: dict[str, float]
    records: dict[str, int]
    cpu_s: float
    server_cpu_s: float
    transactions: int | None
    second_wall: float | None = None
    second_new: int | None = None

    @property
    def needing(self) -> int:
        """Records that each need one call: answers, grades and unusable verdicts."""
        return sum(self.records.get(kind, 0) for kind in ("answer", "grade", "grade_failure"))


@contextmanager
def fresh_store(setup: Setup, folder: Path, base: str) -> Iterator[tuple[str, sa.Engine | None]]:
    """The run's store: a SQLite file in `folder`, or a fresh PostgreSQL database (dropped after)."""
    if not setup.postgres:
        yield str(folder / "livemed.db"), None
        return
    name = f"livemed_week_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(resolve_url(base), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(resolve_url(base)).set(database=name).render_as_string(hide_password=False)
    try:
        yield url, admin
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def committed(admin: sa.Engine | None, url: str) -> int | None:
    """Transactions committed in the run's PostgreSQL database so far (None on SQLite)."""
    if admin is None:
        return None
    name = sa.make_url(url).database
    with admin.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        query = sa.text("SELECT xact_commit FROM pg_stat_database WHERE datname = :name")
        return int(conn.execute(query, {"name": name}).scalar_one())


def _updates(config: Path, setup: Setup) -> tuple[float, float, float]:
    """Start the setup's update process(es) together; (start, end of the last, CPU of them all)."""
    env = {**os.environ, KEY_ENV: "sk-bench-not-real", "COLUMNS": "200"}
    command = [str(PROGRAM), "--config", str(config), "update"]
    command += ["--executor", "ray"] if setup.ray else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    processes = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=config.parent
        )
        for _ in range(1 if setup.ray else setup.workers)
    ]
    outputs = [p.communicate(timeout=3600) for p in processes]
    ended = time.monotonic()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for process, (out, err) in zip(processes, outputs, strict=True):
        if process.returncode != 0:
            raise SystemExit(f"update failed ({process.returncode}):\n{out[-3000:]}\n{err[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if setup.ray:  # the workers are Ray's processes: their CPU is in the driver's report
        cpu += sum(float(m) for m in re.findall(r", ([0-9.]+) s CPU,", outputs[0][0]))
    return started, ended, cpu


def one_run(n: int, args: argparse.Namespace, setup: Setup, server: Server) -> Result:
    with tempfile.TemporaryDirectory(prefix="livemed-week-") as tmp:
        folder = Path(tmp)
        with fresh_store(setup, folder, args.postgres) as (store_url, admin):
            docs = week_docs(folder / "week.jsonl", n)
            config = project(folder, docs, server.base_url, args.concurrency, setup, store_url)
            server.reset()
            xact = committed(admin, store_url)
            server_cpu = server.cpu_s()
            started, ended, cpu = _updates(config, setup)
            server_cpu = server.cpu_s() - server_cpu
            time.sleep(1.0 if admin is not None else 0.0)  # the workers' statistics reach pg_stat
            after = committed(admin, store_url)
            stats = server.stats()
            calls = int(stats["requests"])
            span = (stats["last_done_at"] - stats["first_at"]) if calls else 0.0
            second = _updates(config, Setup("second")) if setup.name == "sqlite" else None
            with Store(store_url) as store:
                runs = sorted(store.iter(Run), key=lambda r: r.started_at)
                count = store.count()
            updates = [r for r in runs if r.command == "update"]
            first_ids = {r.run_id for r in updates[: setup.workers]}
            stages: dict[str, float] = {}
            for r in runs:  # each stage's longest Run over the workers
                if r.settings.get("update") in first_ids and r.ended_at:
                    seconds = (r.ended_at - r.started_at).total_seconds()
                    stages[r.command] = max(stages.get(r.command, 0.0), seconds)
            bound = calls * args.latency / args.concurrency / setup.workers
            return Result(
                wall=ended - started,
                calls=calls,
                distinct=int(stats.get("distinct", calls)),
                cost=sum(r.cost_usd for r in updates if r.run_id in first_ids),
                share=span / (ended - started),
                of_bound=bound / span if span else 0.0,
                stages=stages,
                records={kind: count.get(kind, 0) for kind in RECORD_KINDS},
                cpu_s=cpu,
                server_cpu_s=server_cpu,
                transactions=None if xact is None or after is None else after - xact,
                second_wall=None if second is None else second[1] - second[0],
                second_new=None
                if second is None
                else sum(v for k, v in updates[-1].counts.items() if ": " in k),
            )


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}–{max(values):.{digits}f}]"


def describe(k: int, setup: Setup, n: int, r: Result) -> str:
    stage_text = ", ".join(f"{name} {s:.1f}s" for name, s in r.stages.items())
    records = " ".join(f"{kind} {v}" for kind, v in r.records.items() if v)
    line = (
        f"{setup.name} run {k + 1}: {n} docs · wall {r.wall:.1f} s · {r.calls} calls "
        f"for {r.needing} answers + grades ({r.distinct} distinct bodies) · ${r.cost:.4f} · "
        f"model-wait share {r.share:.2f} · model span / bound {r.of_bound:.2f} · CPU {r.cpu_s:.1f} s "
        f"(fake server {r.server_cpu_s:.1f} s) · "
        f"{stage_text} · records: {records}"
    )
    if r.transactions is not None:
        line += f" · {r.transactions} PostgreSQL transactions"
    if r.second_wall is not None:
        line += f" · second update {r.second_wall:.1f} s, {r.second_new} new"
    return line


def summarise(setup: Setup, results: list[Result]) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "config": setup.name,
        "wall_s": spread([r.wall for r in results], 1),
        "calls": spread([float(r.calls) for r in results], 0),
        "calls_over_records": spread([r.calls / max(r.needing, 1) for r in results], 3),
        "distinct_bodies": spread([float(r.distinct) for r in results], 0),
        "cost_usd": spread([r.cost for r in results], 4),
        "model_wait_share": spread([r.share for r in results]),
        "bound_over_span": spread([r.of_bound for r in results]),
        "cpu_s": spread([r.cpu_s for r in results], 1),
        "server_cpu_s": spread([r.server_cpu_s for r in results], 1),
        "records_equal_across_runs": all(r.records == results[0].records for r in results),
    }
    if all(r.transactions is not None for r in results):
        summary["pg_transactions"] = spread([float(r.transactions or 0) for r in results], 0)
    if all(r.second_wall is not None for r in results):
        summary["second_update_wall_s"] = spread([r.second_wall or 0.0 for r in results], 1)
    for name in results[0].stages:
        summary[f"stage {name} s"] = spread([r.stages.get(name, 0.0) for r in results], 1)
    return summary


def per_item(n: int, done: dict[str, list[Result]]) -> None:
    """The per-item costs behind the 10-node estimate, from the one-worker and curation-only runs."""
    full, curate = done.get("pg1"), done.get("curate")
    if not full or not curate:
        return
    doc_cpu = statistics.median(r.cpu_s for r in curate) / n
    calls = statistics.median(r.calls for r in full)
    call_cpu = (statistics.median(r.cpu_s for r in full) - statistics.median(r.cpu_s for r in curate)) / calls
    doc_tx = statistics.median(float(r.transactions or 0) for r in curate) / n
    call_tx = (
        statistics.median(float(r.transactions or 0) for r in full)
        - statistics.median(float(r.transactions or 0) for r in curate)
    ) / calls
    print(
        f"per item (medians, {n} docs): harvest + curation + rubrics {1000 * doc_cpu:.1f} ms CPU and "
        f"{doc_tx:.2f} PostgreSQL transactions per document (start-up included); answers + grades + "
        f"scores {1000 * call_cpu:.2f} ms client CPU and {call_tx:.2f} transactions per model call "
        f"({calls:.0f} calls)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--configs", nargs="+", default=["sqlite"], help="sqlite, curate, pgN, rayN")
    parser.add_argument("--postgres", default=os.environ.get("LIVEMED_TEST_POSTGRES_URL", DEFAULT_PG))
    args = parser.parse_args()
    setups = [Setup.parse(name) for name in args.configs]
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min), {os.cpu_count()} cores (uptime: {_uptime()})")
    server = Server(args.latency)
    done: dict[str, list[Result]] = {}
    try:
        for setup in setups:
            results: list[Result] = []
            for k in range(args.repeat):
                result = one_run(args.docs, args, setup, server)
                results.append(result)
                print(describe(k, setup, args.docs, result), f"(uptime: {_uptime()})", flush=True)
            done[setup.name] = results
            print(json.dumps(summarise(setup, results), ensure_ascii=False), flush=True)
    finally:
        server.stop()
    print(f"load after: {os.getloadavg()[0]:.2f} (uptime: {_uptime()})")
    per_item(args.docs, done)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
