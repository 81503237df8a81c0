"""BM25 retrieval speed: livemed's `BM25Retriever` (one query at a time, and batched) against bm25s itself.

The corpus is MedQuAD's answered pairs (`load_medquad`, one passage per distinct answer, the default
offline evidence corpus); the queries are 1,000 of its questions drawn with a fixed seed; k = 3. Four
ways, interleaved in each round so their ratios are measured in the same minutes:

- `bm25s per query`: `bm25s.tokenize([q])` + `BM25.retrieve(..., k=3)` per question;
- `bm25s batched`: one `bm25s.tokenize(all)` + one `retrieve(all, k=3)`;
- `livemed per query`: `BM25Retriever.search_sync(q, k=3)` per question (EvidenceRefs with snippets);
- `livemed batched hits`: `BM25Retriever.hits(all, k=3)`, what `offline/retrieval` uses (passage
  indices and scores; its answer is the passages' full text);
- `livemed batched evidence`: `BM25Retriever.search_many(all, k=3)`, what the Validator uses
  (`search_all` → `search_batch`): EvidenceRefs with a snippet each.

Queries per second are per CPU second of this process (`time.process_time`), so other processes'
load counts less; the same per wall second (`time.perf_counter`) is printed beside them. The evidence
figures include what bm25s does not do (a snippet per hit: the passage split into sentences once per
passage; the EvidenceRef records); each way of each round starts with
an empty snippet cache, so nothing of an earlier one is reused. The top-3 ids of both batched livemed
ways are checked against `bm25s batched` (hits with a positive score) every round.

    .venv/bin/python benchmarks/bm25_batch.py [--queries 1000] [--repeat 3]
        [--data /work/shared/data/medquad/medquad_answered_pairs.jsonl.gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import bm25s

from livemed.evidence.bm25 import BM25Retriever
from livemed.evidence.corpus import load_medquad

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/medquad/medquad_answered_pairs.jsonl.gz"
K = 3


def questions(path: Path, n: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open() as handle:
        asked = sorted({str(json.loads(line)["question"]) for line in handle})
    return random.Random(13).sample(asked, n)


def timed(fn: object) -> tuple[float, float]:
    """CPU and wall seconds of this process (all the ways run in one thread). CPU is steadier than wall
    time on a loaded machine, where other processes' work would count too."""
    started, wall = time.process_time(), time.perf_counter()
    fn()  # type: ignore[operator]
    return time.process_time() - started, time.perf_counter() - wall


def main() -> None:  # noqa: C901 - one benchmark, read top to bottom
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    passages = load_medquad(args.data)
    queries = questions(args.data, args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        retriever = BM25Retriever(passages, cache_dir=tmp)
    bm25 = retriever._bm25  # the same index, called the way bm25s documents it
    print(f"{len(passages)} passages, {len(queries)} questions, k={K}")

    def bm25s_one() -> None:
        for query in queries:
            bm25.retrieve(
                bm25s.tokenize([query], stopwords="en", show_progress=False), k=K, show_progress=False
            )

    batched: list[object] = []

    def bm25s_all() -> None:
        batched.append(
            bm25.retrieve(
                bm25s.tokenize(queries, stopwords="en", show_progress=False), k=K, show_progress=False
            )
        )

    mine: list[list[list[str]]] = []

    def livemed_one() -> None:
        for query in queries:
            retriever.search_sync(query, k=K)

    def livemed_hits() -> None:
        mine.append([[passages[i].id for i, _ in found] for found in retriever.hits(queries, k=K)])

    def livemed_all() -> None:
        mine.append([[ref.id for ref in refs] for refs in retriever.search_many(queries, k=K)])

    ways = {
        "bm25s per query": bm25s_one,
        "bm25s batched": bm25s_all,
        "livemed per query": livemed_one,
        "livemed batched hits": livemed_hits,
        "livemed batched evidence": livemed_all,
    }
    rates: dict[str, list[float]] = {name: [] for name in ways}
    wall_rates: dict[str, list[float]] = {name: [] for name in ways}
    ratios: dict[str, list[float]] = {"livemed batched hits": [], "livemed batched evidence": []}
    wall_ratios: dict[str, list[float]] = {name: [] for name in ratios}
    for _ in range(args.repeat):
        for name, fn in ways.items():
            retriever._sentences.clear()  # no snippet work carried over from an earlier way or round
            cpu, wall = timed(fn)
            rates[name].append(len(queries) / cpu)
            wall_rates[name].append(len(queries) / wall)
        for name, values in ratios.items():
            values.append(rates[name][-1] / rates["bm25s batched"][-1])
            wall_ratios[name].append(wall_rates[name][-1] / wall_rates["bm25s batched"][-1])
        indices, scores = batched[-1]  # type: ignore[misc]
        expected = [
            [passages[int(i)].id for i, s in zip(row, srow, strict=True) if s > 0]
            for row, srow in zip(indices, scores, strict=True)
        ]
        for ids in mine[-2:]:
            same = sum(a == b for a, b in zip(ids, expected, strict=True))
            print(f"round: top-{K} identical to bm25s batched for {same} of {len(queries)} questions")
            if same != len(queries):
                raise SystemExit("livemed batched and bm25s batched disagree on the top hits")

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):,.0f} [{min(values):,.0f}–{max(values):,.0f}]"

    print("| way | queries per CPU second, median [min–max] | queries per wall second |")
    print("| --- | --- | --- |")
    for name, values in rates.items():
        print(f"| {name} | {spread(values)} | {spread(wall_rates[name])} |")
    for name, values in ratios.items():
        walls = wall_ratios[name]
        print(
            f"{name} ÷ bm25s batched (same round): CPU "
            f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}], wall "
            f"{statistics.median(walls):.2f} [{min(walls):.2f}–{max(walls):.2f}]"
        )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
