"""Curation figures: BM25 index build vs load from disk, search latency, baseline chain throughput.

Run by hand: `python benchmarks/curate.py [path/to/medquad_answered_pairs.jsonl.gz]` (default: the
shared data folder). Sized for 2 cores: one index build, 200 searches, 200 documents.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from livemed.config import Thresholds
from livemed.curate.baseline import CurationBaseline
from livemed.curate.chain import Chain
from livemed.curate.controller import Controller
from livemed.curate.screener import Screener
from livemed.curate.validator import Validator
from livemed.evidence.bm25 import BM25Retriever
from livemed.evidence.factory import load_passages
from livemed.models import LLM, Engine
from livemed.records import Doc, Reply, ReplyRole

DEFAULT = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "medquad" / "medquad_answered_pairs.jsonl.gz"
)
POST = (
    "I am a {age}-year-old woman. I have had a sore throat and fever for three days. The pain is worse "
    "when swallowing. I have a history of asthma. I take a salbutamol inhaler when needed. I am allergic "
    "to penicillin. Should I see a doctor or will this go away on its own?"
)
ANSWER = (
    "You should drink plenty of fluids and rest. Take paracetamol for the pain and fever. See a doctor "
    "if the fever lasts more than three days or you have difficulty breathing."
)


def timed(label: str, start: float) -> float:
    elapsed = time.perf_counter() - start
    print(f"{label}: {elapsed:.3f} s")
    return elapsed


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    start = time.perf_counter()
    passages = load_passages(path)
    timed(f"load {len(passages)} passages", start)
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        BM25Retriever(passages, cache_dir=cache)
        build = timed("BM25 index build + save", start)
        start = time.perf_counter()
        retriever = BM25Retriever(passages, cache_dir=cache)
        load = timed("BM25 index load from disk", start)
        print(f"load is {build / load:.1f}x faster than build")
        queries = [s for s in ANSWER.split(". ")] * 67
        start = time.perf_counter()
        for query in queries[:200]:
            retriever.search_sync(query, k=3)
        per_query = timed("200 searches", start) / 200
        print(f"search: {per_query * 1000:.2f} ms per query")
        engine = Engine()
        model = CurationBaseline()
        chain = Chain(
            Screener(LLM(engine, model, "screener")),
            Validator(LLM(engine, model, "validator")),
            Controller(),
            retriever,
            Thresholds(),
        )
        docs = [
            Doc(
                source="bench",
                source_id=str(i),
                published=datetime(2026, 10, 1, tzinfo=UTC),
                doc_type="thread",
                text=POST.format(age=20 + i % 60),
                replies=[Reply(role=ReplyRole.PHYSICIAN, text=ANSWER)],
                language="en",
            )
            for i in range(200)
        ]

        async def run_all() -> int:
            outcomes = await asyncio.gather(*(chain(doc) for doc in docs))
            return sum(o.kind == "case" for o in outcomes)

        start = time.perf_counter()
        accepted = asyncio.run(run_all())
        elapsed = timed(f"baseline chain on 200 threads ({accepted} accepted)", start)
        print(f"baseline chain: {200 / elapsed:.0f} documents/s")


if __name__ == "__main__":
    main()
