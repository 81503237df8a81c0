"""Grading throughput: N cases × 6 criteria, per-criterion versus batched, through the Engine.

The judge is a `FakeModel` with a fixed latency per call (default 100 ms) behind the real `Engine`
(concurrency limit, accounting) and the real `run_stage` writing Grades to a temporary SQLite store.
It prints wall time against the concurrency bound (calls × latency / max_concurrency) and calls and
tokens per case in each mode (tokens as the fake counts them: whitespace-separated words).

    .venv/bin/python benchmarks/grading.py [--cases 500] [--latency 0.1] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from livemed.config import Config, ModelConfig
from livemed.grading.judge import Target
from livemed.grading.runs import grade_all
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Answer, Case, Criterion, Narrative, Rubric
from livemed.store import Store

CRITERIA = 6
PUBLISHED = datetime(2025, 6, 1, tzinfo=UTC)
_NUMBERED = re.compile(r"^(\d+)\. \[", re.MULTILINE)


def reply(messages: list[Message], settings: Settings) -> str:
    text = messages[-1]["content"]
    if "<<<CRITERIA" in text:
        numbers = [int(n) for n in _NUMBERED.findall(text.split("<<<CRITERIA")[1])]
        verdicts = [{"id": n, "explanation": "ok", "criteria_met": n % 2 == 1} for n in numbers]
        return json.dumps({"verdicts": verdicts})
    return json.dumps({"explanation": "ok", "criteria_met": True})


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


async def measure(mode: str, cases: int, latency: float, concurrency: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.db")
        config = Config(models={"fake/judge": ModelConfig(max_concurrency=concurrency)})
        engine = Engine(store=None, config=config)
        judge = LLM(engine, FakeModel("fake/judge", function=reply, latency_s=latency), stage="grade")
        work = targets(cases)
        start = time.perf_counter()
        result = await grade_all(store, work, judge, mode=mode, batch_size=max(64, concurrency * 4))  # type: ignore[arg-type]
        wall = time.perf_counter() - start
        usage = engine.accounting.by_model["fake/judge"]
        store.close()
    bound = usage.calls * latency / concurrency
    return {
        "wall_s": wall,
        "bound_s": bound,
        "calls": usage.calls,
        "grades": result.written["grade"],
        "calls_per_case": usage.calls / cases,
        "prompt_tokens_per_case": usage.prompt_tokens / cases,
        "completion_tokens_per_case": usage.completion_tokens / cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    print(
        f"{args.cases} cases × {CRITERIA} criteria, {args.latency * 1000:.0f} ms per call, "
        f"max_concurrency {args.concurrency}"
    )
    for mode in ("per-criterion", "batched"):
        r = asyncio.run(measure(mode, args.cases, args.latency, args.concurrency))
        ratio = r["wall_s"] / r["bound_s"]
        print(
            f"{mode:>13}: {r['calls']:.0f} calls, {r['grades']:.0f} grades, "
            f"wall {r['wall_s']:.2f} s vs bound {r['bound_s']:.2f} s (x{ratio:.2f}); "
            f"per case: {r['calls_per_case']:.1f} calls, {r['prompt_tokens_per_case']:.0f} prompt + "
            f"{r['completion_tokens_per_case']:.0f} completion tokens"
        )


if __name__ == "__main__":
    main()
