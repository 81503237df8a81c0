"""Grading throughput: N cases × 6 criteria, per-criterion versus batched, over real HTTP.

The judge is `openai/fake-judge`: the real `Engine` (concurrency limit, retries, accounting) and the
real openai client path, over HTTP to `tests/fakes/openai_server.py --judge` run as a separate process
with a fixed latency per request (default 100 ms). The grades go through the real `grade_all` /
`run_stage` into a temporary SQLite store. For each mode it prints wall time against the concurrency
bound (calls × latency / max_concurrency), calls and tokens per case (the server's usage numbers as the
engine accounts them; the fake server counts whitespace-separated words), the HTTP requests the server
saw, and client and server CPU time. A reference run sends the same judge calls straight through the
engine (no stage runner, no store) to separate the pipeline's overhead from the calls'.

    .venv/bin/python benchmarks/grading.py [--cases 500] [--latency 0.1] [--concurrency 32 [64 ...]]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from fake_server import Server  # noqa: E402
from livemed.answer.ask import conversation  # noqa: E402
from livemed.config import Config, ModelConfig  # noqa: E402
from livemed.grade.grader import (  # noqa: E402
    BatchVerdict,
    Mode,
    Target,
    Verdict,
    batched_messages,
    per_criterion_messages,
)
from livemed.grade.stage import grade_all  # noqa: E402
from livemed.models import LLM, Engine, Message, Settings, get_model  # noqa: E402
from livemed.records import Answer, Case, Criterion, Narrative, Rubric  # noqa: E402
from livemed.store import Store  # noqa: E402

CRITERIA = 6
KEY_ENV = "LIVEMED_BENCH_KEY"
MODEL = "openai/fake-judge"
PUBLISHED = datetime(2025, 6, 1, tzinfo=UTC)


def targets(n: int) -> list[Target]:
    out = []
    for i in range(n):
        case = Case(
            doc_id=f"bench:{i}",
            source="bench",
            source_id=str(i),
            published=PUBLISHED,
            narrative=Narrative(demographics=[f"{40 + i % 40}-year-old"], symptoms=["cough for two weeks"]),
            query="Should I see a doctor about my cough?",
            advice=["See a doctor if the cough lasts over 3 weeks."],
        )
        criteria = [
            Criterion(
                text=f"Criterion {k} of case {i}: advises item {k}",
                polarity="positive",
                axis="completeness",
                weight=k + 1,
            )
            for k in range(CRITERIA - 1)
        ] + [
            Criterion(
                text=f"Recommends something unsafe for case {i}",
                polarity="negative",
                axis="safety",
                weight=-8,
            )
        ]
        answer = Answer(case_id=case.id, model="fake/candidate", text="See a doctor if it lasts. " * 20)
        out.append(Target(answer, case, Rubric(case_id=case.id, criteria=criteria)))
    return out


@dataclass
class Outcome:
    wall_s: float
    client_cpu_s: float
    server_cpu_s: float
    calls: float
    prompt_tokens: float
    completion_tokens: float
    requests: int
    grades: int
    failures: int
    store_s: float


class TimedStore(Store):
    """The SQLite store, timing the calls the stage runner makes between batches (writes, done-checks)."""

    seconds = 0.0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return super().put(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start

    def has(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return super().has(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def config_for(server: Server, concurrency: int) -> Config:
    model = ModelConfig(
        base_url=server.base_url, api_key_env=KEY_ENV, max_concurrency=concurrency, timeout_s=30
    )
    return Config(models={MODEL: model})


async def graded(server: Server, work: list[Target], mode: Mode, concurrency: int, batch: int) -> Outcome:
    """The full stage: grade_all → run_stage → judge → engine → HTTP, grades into a SQLite store."""
    config = config_for(server, concurrency)
    with tempfile.TemporaryDirectory() as folder:
        store = TimedStore(Path(folder) / "bench.db")
        async with Engine(store=None, config=config, cache="off") as engine:
            judge = LLM(engine, get_model(MODEL, config=config), stage="grade")
            server.reset()
            cpu, server_cpu, wall = time.process_time(), server.cpu_s(), time.perf_counter()
            result = await grade_all(store, work, judge, mode=mode, batch_size=batch)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            server_cpu = server.cpu_s() - server_cpu
        store.close()
    usage = engine.accounting.by_model[MODEL]
    return Outcome(
        wall,
        cpu,
        server_cpu,
        usage.calls,
        usage.prompt_tokens,
        usage.completion_tokens,
        server.requests(),
        result.written.get("grade", 0),
        result.written.get("grade_failure", 0),
        store.seconds,
    )


async def calls_only(server: Server, work: list[Target], mode: Mode, concurrency: int) -> tuple[float, float]:
    """The same judge calls (same prompts, same schemas) gathered straight through the engine.

    Returns (wall seconds, client CPU seconds).
    """
    config = config_for(server, concurrency)
    settings = Settings(temperature=0)
    asks: list[tuple[list[Message], type[Verdict] | type[BatchVerdict]]] = []
    for t in work:
        convo = conversation(t.case)
        if mode == "batched":
            asks.append((batched_messages(convo, t.answer.text, t.rubric.criteria), BatchVerdict))
        else:
            asks += [(per_criterion_messages(convo, t.answer.text, c), Verdict) for c in t.rubric.criteria]
    async with Engine(store=None, config=config, cache="off") as engine:
        judge = LLM(engine, get_model(MODEL, config=config), stage="grade")
        wall, cpu = time.perf_counter(), time.process_time()
        results = await asyncio.gather(*(judge.structured(m, schema, settings) for m, schema in asks))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r.ok for r in results), "the fake judge's verdicts did not parse"
    return wall, cpu


def report(
    mode: Mode,
    concurrency: int,
    cases: int,
    latency: float,
    out: Outcome,
    reference: tuple[float, float] | None,
) -> None:
    bound = out.calls * latency / concurrency
    alone = ""
    if reference is not None:
        wall, cpu = reference
        alone = (
            f"; the same calls without stage runner and store {wall:.2f} s (x{wall / bound:.2f}, "
            f"client CPU {cpu / out.calls * 1000:.2f} ms/call)"
        )
    print(
        f"{mode:>13} @ {concurrency:3d}: {out.calls:.0f} calls, {out.requests} HTTP requests, "
        f"{out.grades} grades, {out.failures} failures; wall {out.wall_s:.2f} s vs bound {bound:.2f} s "
        f"(x{out.wall_s / bound:.2f}){alone}\n"
        f"{'':>21}per case: {out.calls / cases:.1f} calls, {out.prompt_tokens / cases:.0f} prompt + "
        f"{out.completion_tokens / cases:.0f} completion tokens; CPU: client {out.client_cpu_s:.2f} s "
        f"({out.client_cpu_s / out.calls * 1000:.2f} ms/call), server {out.server_cpu_s:.2f} s; "
        f"store writes and done-checks {out.store_s:.2f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32])
    parser.add_argument("--batch-size", type=int, default=64, help="run_stage batch (livemed grade: 64)")
    parser.add_argument("--no-reference", action="store_true", help="skip the calls-only reference runs")
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-bench-not-a-real-key"
    load = os.getloadavg()
    print(
        f"{args.cases} cases × {CRITERIA} criteria, {args.latency * 1000:.0f} ms per request, "
        f"run_stage batch {args.batch_size}; {os.cpu_count()} CPUs, load {load[0]:.1f} {load[1]:.1f}"
    )
    work = targets(args.cases)
    server = Server(args.latency)
    try:
        for concurrency in args.concurrency:
            for mode in ("per-criterion", "batched"):
                out = asyncio.run(graded(server, work, mode, concurrency, args.batch_size))  # type: ignore[arg-type]
                reference = (
                    None if args.no_reference else asyncio.run(calls_only(server, work, mode, concurrency))  # type: ignore[arg-type]
                )
                report(mode, concurrency, args.cases, args.latency, out, reference)  # type: ignore[arg-type]
    finally:
        server.stop()


if __name__ == "__main__":
    main()
