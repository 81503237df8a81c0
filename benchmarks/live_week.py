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

    .venv/bin/python benchmarks/live_week.py [--docs 1000] [--latency 0.2] [--concurrency 64] [--repeat 3]
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fake_server import Server
from livemed.demo import demo_docs_path, demo_evidence_path
from livemed.records import Run
from livemed.store import Store

PROGRAM = Path(sys.executable).with_name("livemed")
KEY_ENV = "LIVEMED_BENCH_KEY"
CANDIDATE, JUDGE = "openai/bench-candidate", "openai/bench-judge"
WEEK_START = datetime(2026, 11, 23, tzinfo=UTC)


def week_docs(path: Path, n: int) -> Path:
    """`n` documents: the demo documents repeated under new ids, dated over one week."""
    demo = [json.loads(line) for line in demo_docs_path().read_text(encoding="utf-8").splitlines() if line]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            doc = dict(demo[i % len(demo)])
            doc["source_id"] = f"{doc['source_id']}-w{i}"
            doc["url"] = f"https://example.org/livemed-week/{doc['source_id']}"
            doc["published"] = (WEEK_START + timedelta(seconds=i * 7 * 86400 / n)).isoformat()
            handle.write(json.dumps(doc) + "\n")
    return path


def project(folder: Path, docs: Path, base_url: str, concurrency: int) -> Path:
    lines = [
        'store = "livemed.db"',
        "cutoff = 2026-11-22",
        "[sources.demo]",
        f'path = "{docs}"',
        "[prefilter]",
        'enabled = ["html", "length", "language", "vocabulary"]',
        "[curate]",
        f'evidence = "{demo_evidence_path()}"',
        "[update]",
        'writer = "offline/rules"',
        f'models = ["{CANDIDATE}"]',
        f'judge = "{JUDGE}"',
    ]
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
    cost: float
    share: float
    of_bound: float
    stages: dict[str, float]
    cases: int
    second_wall: float
    second_new: int


def _update(config: Path) -> tuple[float, float]:
    env = {**os.environ, KEY_ENV: "sk-bench-not-real", "COLUMNS": "200"}
    started = time.monotonic()
    done = subprocess.run(
        [str(PROGRAM), "--config", str(config), "update"],
        env=env,
        capture_output=True,
        text=True,
        cwd=config.parent,
    )
    ended = time.monotonic()
    if done.returncode != 0:
        raise SystemExit(f"update failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return started, ended


def one_run(n: int, latency: float, concurrency: int, server: Server) -> Result:
    with tempfile.TemporaryDirectory(prefix="livemed-week-") as tmp:
        folder = Path(tmp)
        config = project(folder, week_docs(folder / "week.jsonl", n), server.base_url, concurrency)
        server.reset()
        started, ended = _update(config)
        stats = server.stats()
        calls = int(stats["requests"])
        span = (stats["last_done_at"] - stats["first_at"]) if calls else 0.0
        second = _update(config)
        with Store(folder / "livemed.db") as store:
            runs = sorted(store.iter(Run), key=lambda r: r.started_at)
            count = store.count()
        updates = [r for r in runs if r.command == "update"]
        first_id = updates[0].run_id
        stages = {
            r.command: (r.ended_at - r.started_at).total_seconds()
            for r in runs
            if r.settings.get("update") == first_id and r.ended_at
        }
        bound = calls * latency / concurrency
        return Result(
            wall=ended - started,
            calls=calls,
            cost=updates[0].cost_usd,
            share=span / (ended - started),
            of_bound=bound / span if span else 0.0,
            stages=stages,
            cases=count.get("case", 0),
            second_wall=second[1] - second[0],
            second_new=sum(v for k, v in updates[1].counts.items() if ": " in k),
        )


def spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}–{max(values):.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min), {os.cpu_count()} cores (uptime: {_uptime()})")
    server = Server(args.latency)
    results: list[Result] = []
    try:
        for k in range(args.repeat):
            result = one_run(args.docs, args.latency, args.concurrency, server)
            results.append(result)
            stage_text = ", ".join(f"{name} {s:.1f}s" for name, s in result.stages.items())
            print(
                f"run {k + 1}: {args.docs} docs → {result.cases} cases · wall {result.wall:.1f} s · "
                f"{result.calls} calls · ${result.cost:.4f} · model-wait share {result.share:.2f} · "
                f"model span / bound {result.of_bound:.2f} · {stage_text} · second update "
                f"{result.second_wall:.1f} s, {result.second_new} new",
                flush=True,
            )
    finally:
        server.stop()
    print(f"load after: {os.getloadavg()[0]:.2f} (uptime: {_uptime()})")
    summary: dict[str, Any] = {
        "docs": args.docs,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "wall_s": spread([r.wall for r in results], 1),
        "calls": spread([float(r.calls) for r in results], 0),
        "cost_usd": spread([r.cost for r in results], 4),
        "model_wait_share": spread([r.share for r in results]),
        "bound_over_span": spread([r.of_bound for r in results]),
        "second_update_wall_s": spread([r.second_wall for r in results], 1),
    }
    for name in results[0].stages:
        summary[f"stage {name} s"] = spread([r.stages.get(name, 0.0) for r in results], 1)
    print(json.dumps(summary, indent=2, ensure_ascii=False))


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
