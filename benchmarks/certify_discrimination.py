"""Does `judges certify` tell a broken grader from a good one? (run by hand; prints figures, no timing)

    PYTHONPATH=src .venv/bin/python benchmarks/certify_discrimination.py [--data ../shared/data] [--runs 20]

The certification battery at its default size (pairs from every dataset under --data, stratified; the
rubric items of 50 K-QA cases with offline/rules rubrics) against scripted graders of known quality:
always-met (and [[A]]), never-met (and [[B]]), random, right with p = 0.6 / 0.8 / 0.95, position-biased
(A / met with probability 0.9), and 30 % rambling (prose instead of a verdict; right with p = 0.95
otherwise). For the first seed it prints each card's verdicts, figures, intervals and calls; over all
seeds, how often each grader's card passed, and how often a figure's 95 % interval holds the grader's
true rate. Targets (issue 31): every trivial grader fails every axis; p = 0.95 passes; coverage ≥ 95 %;
≤ 2,000 calls per grader.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typer.testing import CliRunner

from livemed.cli import app
from livemed.common.prompts import parse_blocks
from livemed.judges.battery import (
    Battery,
    judge_in_memory,
    make_battery,
    pair_trivial,
    rubric_outcomes,
    rubric_trivial,
)
from livemed.judges.certification import combine, pair_part, rubric_part, shown
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Case, Rubric
from livemed.store import Store


@dataclass(frozen=True)
class Kind:
    """A scripted grader: right with probability `p`, else wrong; `lean` answers met / A with that
    probability whatever the truth; `ramble` the share of replies that are prose, not a verdict."""

    name: str
    p: float | None = None
    lean: float | None = None
    ramble: float = 0.0

    def rubric_rate(self) -> float:
        """The true share of items graded right (the battery is balanced: a lean scores 0.5)."""
        return 0.5 if self.p is None else (1 - self.ramble) * self.p

    def pair_rate(self) -> float:
        return self.rubric_rate()

    def consistent_rate(self) -> float:
        """Right in both orders: p² for a grader whose orders are independent; a lean l: l(1 − l)."""
        if self.lean is not None:
            return self.lean * (1 - self.lean)
        return self.pair_rate() ** 2


KINDS = (
    Kind("always-met / always-A", lean=1.0),
    Kind("never-met / always-B", lean=0.0),
    Kind("random", lean=0.5),
    Kind("p = 0.6", p=0.6),
    Kind("p = 0.8", p=0.8),
    Kind("p = 0.95", p=0.95),
    Kind("position-biased (0.9)", lean=0.9),
    Kind("30 % rambling, p = 0.95", p=0.95, ramble=0.3),
)
TRIVIAL = {"always-met / always-A", "never-met / always-B", "random", "position-biased (0.9)"}


def scripted(kind: Kind, battery: Battery, seed: int) -> LLM:
    """A model answering the battery's grading and pair prompts as `kind` does."""
    truth = {(p.criterion.text, p.text): p.expected for p in battery.items}
    better = {
        (q.question, frozenset((q.chosen.text, q.rejected.text))): q.chosen.text
        for q in (*battery.pairs, *battery.probes)
    }

    def reply(messages: list[Message], settings: Settings) -> str:
        content = messages[-1]["content"]
        blocks = {b.name: b.text for b in parse_blocks(content)}
        rng = random.Random(f"{seed}:{kind.name}:{content}:{settings.sample}")  # str seeds: stable
        if any(m["role"] == "assistant" for m in messages):  # the engine's one repair: it rambles on
            return "As I said, there is a lot to weigh here."
        if rng.random() < kind.ramble:
            return "Let me think about this carefully, there is a lot to weigh here and both have merits."
        if "criterion" in blocks:
            right = truth[(blocks["criterion"], blocks["response"])]
            met = _choose(kind, rng, right)
            return json.dumps({"explanation": "scripted", "criteria_met": met})
        texts = [b.text for b in parse_blocks(content) if b.name == "response"]
        first_is_better = better[(_question(content), frozenset(texts))] == texts[0]
        slot = "A" if _choose(kind, rng, first_is_better) else "B"
        return f"<think>scripted</think><answer>[[{slot}]]</answer>"

    return LLM(Engine(), FakeModel(f"fake/{kind.name}", function=reply), stage="judges")


def _question(content: str) -> str:
    """The pair's question as the prompt holds it (`pairwise_messages` puts it in the source block)."""
    return next(b.text for b in parse_blocks(content) if b.name == "source")


def _choose(kind: Kind, rng: random.Random, right: bool) -> bool:
    if kind.lean is not None:
        return rng.random() < kind.lean
    return right if rng.random() < (kind.p or 0.0) else not right


def kqa_cases(data: Path, n: int) -> list[tuple[Case, Rubric]]:
    """`n` K-QA cases with offline/rules rubrics, made in a temporary store by the CLI."""
    folder = Path(tempfile.mkdtemp())
    store = folder / "s.db"
    kqa = str(data / "k-qa" / "questions_w_answers.jsonl")
    for args in (
        ["import-kqa", kqa, "--published", "2024-01-01", "--limit", str(n)],
        ["rubrics", "--writer", "offline/rules"],
    ):
        result = CliRunner().invoke(app, ["--store", str(store), *args])
        assert result.exit_code == 0, result.output
    with Store(store) as s:
        rubrics = {r.case_id: r for r in s.iter(Rubric)}
        return [(c, rubrics[c.id]) for c in s.iter(Case) if c.id in rubrics]


async def certify(kind: Kind, battery: Battery, seed: int, trivial: dict[str, Any]) -> dict[str, Any]:
    llm = scripted(kind, battery, seed)
    outcomes = await rubric_outcomes(battery, llm, "per-criterion", 1)
    plain, failed = await judge_in_memory(battery.pairs, llm, 1, 1.0)
    probe, more = await judge_in_memory(battery.probes, llm, 1, 1.0)
    assert not failed + more, failed + more
    rubric = rubric_part(outcomes, trivial["rubric"])
    pairs = pair_part(plain, probe, trivial["pairs"])
    calls = llm.engine.accounting.by_model[llm.model.id].calls
    return {
        "rubric": rubric,
        "pairs": pairs,
        "verdict": combine([rubric["verdict"], pairs["verdict"]]),
        "calls": calls,
    }


def true_rate(kind: Kind, name: str) -> float:
    return kind.consistent_rate() if name == "position-consistent" else kind.rubric_rate()


def covered(kind: Kind, card: dict[str, Any]) -> tuple[int, int]:
    """Figures whose interval holds the grader's true rate, of the figures with an interval."""
    hits = total = 0
    for part in ("rubric", "pairs"):
        for name, figure in card[part]["figures"].items():
            if figure["low"] is None:
                continue
            total += 1
            hits += figure["low"] - 1e-9 <= true_rate(kind, name) <= figure["high"] + 1e-9
    return hits, total


def show(kind: Kind, card: dict[str, Any]) -> None:
    print(f"\n{kind.name}: card {card['verdict'].upper()}, {card['calls']:,} calls")
    for part in ("rubric", "pairs"):
        print(f"  {part} {card[part]['verdict']}")
        for name, figure in card[part]["figures"].items():
            bar = f"best trivial {figure['best_trivial']} {figure['bar']:.3f}"
            print(f"    {name:22} {shown(figure, 3):34} {bar:38} {figure['verdict']}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("LIVEMED_SHARED_DATA", "../shared/data"))
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cases", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(runs(args, kqa_cases(args.data, args.cases)))


async def runs(args: argparse.Namespace, cases: list[tuple[Case, Rubric]]) -> None:
    passed: Counter[str] = Counter()
    axis_passes: Counter[str] = Counter()
    hits = total = 0
    calls: list[int] = []
    for seed in range(args.runs):
        battery = make_battery(cases, args.data, seed=seed, per_dataset=None)
        trivial = {"rubric": await rubric_trivial(battery, seed), "pairs": await pair_trivial(battery.pairs)}
        if seed == 0:
            print(battery.plan(1, "per-criterion", offline=False))
        for kind in KINDS:
            card = await certify(kind, battery, seed, trivial)
            calls.append(card["calls"])
            passed[kind.name] += card["verdict"] == "passed"
            figures = [f for part in ("rubric", "pairs") for f in card[part]["figures"].values()]
            axis_passes[kind.name] += sum(f["verdict"] == "passed" for f in figures)
            h, t = covered(kind, card)
            hits, total = hits + h, total + t
            if seed == 0:
                show(kind, card)
    print(f"\nover {args.runs} seeded runs:")
    for kind in KINDS:
        print(
            f"  {kind.name:26} card passed {passed[kind.name]:2} / {args.runs}; "
            f"figures passed {axis_passes[kind.name]}"
        )
    print(f"  figures whose 95 % interval holds the true rate: {hits} / {total} = {hits / total:.3f}")
    print(f"  calls per certification: {min(calls):,}–{max(calls):,}")
    failures = [k.name for k in KINDS if k.name in TRIVIAL and axis_passes[k.name]]
    print(f"  trivial graders with a passed figure: {failures or 'none'}")


if __name__ == "__main__":
    main()
