"""The CPU smoke run of judge training, timed: tiny random Llama → SFT (a few steps) → GRPO (a few steps)
→ the checkpoint judged through `hf/` and the engine. Needs `livemed[train]`; downloads nothing.

Prints, per repeat, the wall time of building the tiny base, of `train_judge` (both stages) and of judging
six prompts with the trained checkpoint, then the median and range, and the machine load (`uptime`).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/training_smoke.py [--repeat 3] [--pairs 8]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from livemed.judges.parse import parse_pairwise
from livemed.models import LLM, Completion, Engine, Settings
from livemed.models.hf import HFModel
from livemed.records import Candidate, Pair
from livemed.training.exports import grpo_rows, write_rows
from livemed.training.judging import parse, render
from livemed.training.tiny import build_tiny_base
from livemed.training.train import TrainSettings, train_judge


def pairs(n: int) -> list[Pair]:
    out = []
    for i in range(n):
        chosen = Candidate(id="gold", text=f"Rationale {i}. Answer: B", answer="B", metric=1.0)
        rejected = Candidate(id="c", text=f"Rationale {i}. Answer: C", answer="C", metric=0.0, rank=1)
        out.append(
            Pair(
                dataset="medqa",
                family="atomic",
                item_id=f"q{i}",
                question=f"Question {i}?",
                instruction="Choose the best option.",
                chosen=chosen,
                rejected=rejected,
                gold="A" if i % 2 else "B",
                rank_gap=1,
                licence="MIT",
            )
        )
    return out


async def judge(path: Path, prompts: list[list[dict[str, str]]]) -> tuple[int, int]:
    async with Engine() as engine:
        llm = LLM(engine, HFModel(str(path)), stage="judges")
        settings = Settings(temperature=1.0, max_tokens=16, seed=0)
        replies = await asyncio.gather(*(llm.generate(m, settings) for m in prompts))  # type: ignore[arg-type]
    texts = [r for r in replies if isinstance(r, Completion)]
    return len(texts), sum(parse_pairwise(r.text, r.reasoning).valid for r in texts)


def once(folder: Path, n: int) -> dict[str, float]:
    items = pairs(n)
    rows = grpo_rows(items, render)
    started = time.perf_counter()
    base = build_tiny_base(folder / "base", [m["content"] for r in rows for m in r["prompt"]])
    built = time.perf_counter()
    verdict = "<think>x</think><answer>[[{}]]</answer>"
    sft = [
        {**r, "completion": [{"role": "assistant", "content": verdict.format(r["gold_verdict"])}]}
        for r in rows
    ]
    settings = TrainSettings(
        regime="sft+grpo",
        base=str(base),
        sft_max_steps=3,
        grpo_max_steps=2,
        batch_size=4,
        num_generations=2,
        max_completion_length=16,
        max_length=1024,
    )
    sft_data, grpo_data = write_rows(sft, folder / "sft.jsonl"), write_rows(rows, folder / "grpo.jsonl")
    train_judge(settings, folder / "run", sft_data=sft_data, grpo_data=grpo_data, parse=parse)
    trained = time.perf_counter()
    answered, valid = asyncio.run(judge(folder / "run" / "grpo", [r["prompt"] for r in rows[:6]]))
    done = time.perf_counter()
    print(
        f"  base {built - started:.2f} s · sft+grpo {trained - built:.2f} s · judge 6 prompts "
        f"{done - trained:.2f} s ({answered} answered, {valid} compliant)"
    )
    return {
        "base": built - started,
        "train": trained - built,
        "judge": done - trained,
        "total": done - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args()
    print(f"load before: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    runs = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            print(f"run {i + 1}:")
            runs.append(once(Path(tmp), args.pairs))
    for key in ("base", "train", "judge", "total"):
        values = [r[key] for r in runs]
        print(f"{key:>6}: median {statistics.median(values):.2f} s [{min(values):.2f}–{max(values):.2f}]")
    print(f"load after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
