"""Harvest pre-filters + near-duplicate detection over generated forum-length documents.

Runs the default pre-filter chain (HTML stripping, length, language, medical vocabulary, exact and
MinHash-LSH near duplicates) over 10,000 and 100,000 generated posts (~120-200 words each, in HTML,
with 3% exact and 5% near duplicates, 3% French and 5% off-topic posts), and prints documents per
second and the 100k/10k time ratio (aims: >= 2,000 docs/s on 2 cores; ratio <= 12). Then times
persisting the 100k signatures to a SQLite store and loading them back.

    .venv/bin/python benchmarks/prefilter.py [--sizes 10000 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import random
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from livemed.config import PrefilterConfig
from livemed.prefilter import build_prefilters
from livemed.prefilter.duplicates import DuplicateFilter
from livemed.records import Doc, Rejection
from livemed.store import Store


def _split(text: str) -> list[str]:
    return text.split()


MEDICAL = _split(
    "pain fever headache nausea dizziness fatigue rash cough asthma diabetes hypertension insulin metformin "
    "ibuprofen paracetamol antibiotic infection kidney liver thyroid anemia migraine arthritis fracture "
    "pneumonia bronchitis allergy eczema psoriasis depression anxiety insomnia tachycardia arrhythmia "
    "cholesterol statin vitamin deficiency ulcer gastritis reflux constipation diarrhea vomiting seizure"
)
COMMON = _split(
    "i my the a and to of in it is was have had for on with that this but so after since about what should "
    "do does can could would be been nurse told me week days months year ago now still worse better "
    "morning night take taking started stopped feel feeling really very also when because any advice"
)
FRENCH = _split("je mon la le et de un une est avec pour dans médecin depuis jours mal tête fièvre douleur")


def post(rng: random.Random, words: list[str], medical: bool, extra: list[str] = MEDICAL) -> str:
    """A forum-length post: mostly everyday words, some from `extra` (a broad medical vocabulary)."""
    sentences = []
    for _ in range(rng.randint(9, 15)):
        chosen = [
            rng.choice(extra) if medical and rng.random() < 0.25 else rng.choice(words)
            for _ in range(rng.randint(10, 16))
        ]
        sentences.append(" ".join(chosen).capitalize() + ".")
    half = len(sentences) // 2
    return f"<p>{' '.join(sentences[:half])}</p><p>{' '.join(sentences[half:])}</p><p>Thanks in advance!</p>"


def vocabulary(rng: random.Random) -> list[str]:
    """About 3,000 medical words (ICD-10-CM title words) plus the hand list, so posts vary like real ones."""
    from livemed.prefilter.vocabulary import icd10_terms

    terms = sorted(icd10_terms())
    return MEDICAL + rng.sample(terms, min(3000, len(terms)))


def generate(n: int, seed: int = 7) -> list[Doc]:
    rng = random.Random(seed)
    medical = vocabulary(rng)
    when = datetime(2025, 3, 1, tzinfo=UTC)
    texts: list[str] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.03 and texts:
            text = rng.choice(texts)
        elif roll < 0.08 and texts:
            words = rng.choice(texts).split(" ")
            words[rng.randrange(len(words))] = "changed"
            text = " ".join(words)
        elif roll < 0.11:
            text = post(rng, FRENCH, medical=False)
        elif roll < 0.16:
            text = post(rng, COMMON, medical=False)
        else:
            text = post(rng, COMMON, medical=True, extra=medical)
        texts.append(text)
    return [
        Doc(source="bench", source_id=str(i), published=when, doc_type="thread", text=t)
        for i, t in enumerate(texts)
    ]


def run(docs: list[Doc]) -> tuple[float, Counter[str], DuplicateFilter]:
    chain = build_prefilters(PrefilterConfig())
    chain(Doc(source="warm", source_id="0", published=docs[0].published, text="warm up the models"))
    outcomes: Counter[str] = Counter()
    started = time.perf_counter()
    for doc in docs:
        result = chain(doc)
        outcomes[result.reason if isinstance(result, Rejection) else "kept"] += 1
    elapsed = time.perf_counter() - started
    dedup = next(f for f in chain.filters if isinstance(f, DuplicateFilter))
    return elapsed, outcomes, dedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per size; the fastest counts (shared machines)"
    )
    args = parser.parse_args()
    times: dict[int, float] = {}
    dedup = None
    for n in args.sizes:
        docs = generate(n)
        # A real harvest streams documents; here they are all in memory, so keep the garbage collector
        # from re-scanning them (it would charge their number, not the filters, to the larger run).
        gc.collect()
        gc.freeze()
        for attempt in range(args.repeat):
            elapsed, outcomes, dedup = run(docs)
            times[n] = min(times.get(n, elapsed), elapsed)
            rate = n / elapsed
            print(f"{n:>7,} docs (run {attempt + 1}): {elapsed:7.2f} s {rate:8,.0f} docs/s {dict(outcomes)}")
        gc.unfreeze()
        del docs
        print(f"{n:>7,} docs: best {times[n]:.2f} s = {n / times[n]:,.0f} docs/s")
    if len(times) >= 2:
        small, large = min(times), max(times)
        print(
            f"time ratio {large:,}/{small:,}: {times[large] / times[small]:.2f} "
            f"(size ratio {large / small:g})"
        )
    if dedup is not None:
        with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "bench.db") as store:
            started = time.perf_counter()
            dedup.flush(store)
            saved = time.perf_counter() - started
            started = time.perf_counter()
            fresh = DuplicateFilter()
            loaded = fresh.load(store)
            print(
                f"signatures: persisted {loaded:,} in {saved:.2f} s, loaded into LSH in "
                f"{time.perf_counter() - started:.2f} s"
            )


if __name__ == "__main__":
    main()
