"""livemed's own CPU per call in the streaming `eval` path, without HTTP: what the stages cost.

The same generated HealthBench-format workload as `benchmarks/eval_throughput.py` (N examples × 5
rubric items: 1 candidate call + 5 per-criterion grader calls each) goes through
`live.stream.answer_and_grade` — prompts, the response cache, structured verdicts, records, the
store's writes in a real SQLite file — with the two models scripted in-process (`FakeModel`, named
`openai/…` so their replies take the paid-call path of the cache: written in the next loop turn).
The figure is this process's CPU time (`time.process_time`) over `answer_and_grade` ÷ calls: no
start-up, no import, no scoring, and no HTTP client (`benchmarks/engine.py` measures the engine with
aiohttp against the fake server). Run it under another checkout's code for an A/B in the same minutes:

    .venv/bin/python benchmarks/eval_cpu.py [--n 1000] [--repeat 3]
    PYTHONPATH=/path/to/other/checkout/src .venv/bin/python benchmarks/eval_cpu.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import livemed
from eval_throughput import workload
from livemed.domains import load_pack
from livemed.interop.healthbench import read_healthbench
from livemed.live.stream import answer_and_grade
from livemed.models import LLM, Completion, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.store import Store

VERDICT = json.dumps({"explanation": "The response does what the criterion asks.", "criteria_met": True})
ANSWER = (
    "A cough lasting a few days is usually viral. Rest, fluids and honey can help. See a doctor if you "
    "have a high fever, trouble breathing, chest pain, or a cough lasting more than three weeks."
)


def reply(messages: list[Message], settings: Settings) -> Completion:
    """A new Completion per call, as an HTTP model's reply parser makes one (the fake's own token count,
    a split of every prompt, is not livemed's cost: fixed counts here)."""
    text = VERDICT if settings.json_schema is not None else ANSWER
    return Completion(text=text, finish_reason="stop", prompt_tokens=900, completion_tokens=60, model="x")


def one_run(data: Path, n: int) -> tuple[float, int]:
    """(CPU seconds of answer_and_grade, calls made) for one fresh store."""
    with tempfile.TemporaryDirectory(prefix="livemed-eval-cpu-") as tmp:
        store = Store(Path(tmp) / "livemed.db")
        pairs = [
            pair
            for pair in read_healthbench(data, published=datetime(2025, 1, 1, tzinfo=UTC), date_field="")
            if isinstance(pair, tuple)
        ]
        assert len(pairs) == n
        store.put([case for case, _ in pairs] + [rubric for _, rubric in pairs])
        cases = [case for case, _ in pairs]
        candidate = FakeModel("openai/bench-candidate", function=reply)
        grader = FakeModel("openai/bench-judge", function=reply)

        async def go() -> float:
            engine = Engine(store=store)
            started = time.process_time()
            result = await answer_and_grade(
                store,
                cases,
                [LLM(engine, candidate, "answer")],
                LLM(engine, grader, "grade"),
                settings=Settings(),
                pack=load_pack("medical"),  # as `livemed eval` passes its domain's pack
            )
            engine.flush()
            spent = time.process_time() - started
            assert result.grades.written.get("grade", 0) == n * 5, result.grades.written
            return spent

        spent = asyncio.run(go())
        store.engine.dispose()
        return spent, len(candidate.calls) + len(grader.calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"livemed from {Path(livemed.__file__).parent}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        data = workload(Path(tmp) / "hb.jsonl", args.n)
        per_call = []
        for _ in range(args.repeat):
            spent, calls = one_run(data, args.n)
            per_call.append(1000 * spent / calls)
            print(f"run: {calls} calls, {spent:.2f} s CPU, {per_call[-1]:.3f} ms per call", flush=True)
    print(
        f"CPU ms per call, median [min–max] of {args.repeat}: {statistics.median(per_call):.3f} "
        f"[{min(per_call):.3f}–{max(per_call):.3f}]"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
