"""`offline/lexical` against labels: the K-QA development set (dev / held-out) and physicians' labels.

Builds the labelled set of `benchmarks/kqa_labels.py` from K-QA, writes it as JSONL files that
`livemed judges agreement --labels` reads, and prints macro-F1, met-recall and Cohen's kappa of the
current grader and of the grader at a baseline git revision (default: the one before this work), per
split, plus the always-"not met" floor. With `--physician FILE` (K-QA's `NLI_medical_annotator.csv`,
physicians' majority labels on LLM answers; any file the agreement command reads) it scores that too,
all of it and per half (its questions fall in the same dev / held-out split as the K-QA items).
Throughput: grades per second over the held-out items, `--repeat` runs each, with `uptime` before.

    .venv/bin/python benchmarks/lexical_grader.py [--kqa ../shared/data/k-qa/questions_w_answers.jsonl]
        [--out bench-out] [--physician NLI_medical_annotator.csv] [--baseline-rev bb217c5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from benchmarks import kqa_labels  # noqa: E402

from livemed.errors import InputFileError  # noqa: E402
from livemed.grade import lexical  # noqa: E402
from livemed.interop.labels import LabelItem, read_labels  # noqa: E402
from livemed.judges.agreement import Agreement, metrics  # noqa: E402

Judge = Callable[[str, str], tuple[bool, str]]
BASELINE_REV = "bb217c5"  # main before issue 12's grader work


def baseline_grader(rev: str) -> ModuleType:
    """`grade/lexical.py` as it was at `rev`, imported as its own module."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:src/livemed/grade/lexical.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="lexical-baseline-"))
    path = folder / "lexical_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("lexical_baseline", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import the grader of {rev}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(items: Sequence[LabelItem], judge: Judge) -> Agreement:
    return metrics([i.label for i in items], [judge(i.response, i.criterion)[0] for i in items])


def row(name: str, result: Agreement) -> str:
    kappa = "—" if result.kappa is None else f"{result.kappa:.3f}"
    met = result.per_class["met"]
    return (
        f"  {name:<22} n={result.n:<5} macro-F1 {result.macro_f1:.3f}  met-recall {met.recall:.3f}  "
        f"met-precision {met.precision:.3f}  kappa {kappa}"
    )


def load(path: Path) -> list[LabelItem]:
    items = [i for i in read_labels(path) if not isinstance(i, InputFileError)]
    return [i for i in items if isinstance(i, LabelItem)]


def report(label: str, items: Sequence[LabelItem], graders: dict[str, Judge]) -> None:
    print(f"{label} ({len(items)} items, {sum(i.label for i in items)} met)")
    for name, judge in graders.items():
        print(row(name, score(items, judge)))
    print(row("always not met", metrics([i.label for i in items], [False] * len(items))))


def by_kind(split: str, path: Path, graders: dict[str, Judge]) -> None:
    """Accuracy per kind of item (own statement, unrelated, negated, altered, removed)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    kinds = sorted({r["kind"] for r in rows})
    for name, judge in graders.items():
        cells = []
        for kind in kinds:
            some = [r for r in rows if r["kind"] == kind]
            right = sum(judge(r["response"], r["criterion"])[0] == (r["label"] == "met") for r in some)
            cells.append(f"{kind} {right / len(some):.2f} (n={len(some)})")
        print(f"  accuracy by kind, {split}, {name}: " + ", ".join(cells))


def throughput(items: Sequence[LabelItem], graders: dict[str, Judge], repeat: int) -> dict[str, list[float]]:
    """Grades per second of each grader, `repeat` times, the graders taking turns (load hits both alike).

    The new grader's parse of a response is cleared before each run (an answer is graded once); its
    cache of word keys is not (a long grading run keeps it warm)."""
    rates: dict[str, list[float]] = {name: [] for name in graders}
    for _ in range(repeat):
        for name, judge in graders.items():
            lexical.prepare.cache_clear()
            start = time.perf_counter()
            for item in items:
                judge(item.response, item.criterion)
            rates[name].append(len(items) / (time.perf_counter() - start))
    return rates


def write_sets(kqa: Path, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    items = kqa_labels.build(kqa_labels.read_kqa(kqa))
    paths = {}
    for split in kqa_labels.SPLITS:
        paths[split] = out / f"kqa-lexical-{split}.jsonl"
        n = kqa_labels.write_jsonl((i for i in items if i["split"] == split), paths[split])
        print(f"wrote {n} items to {paths[split]}")
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_kqa = REPO.parent / "shared" / "data" / "k-qa" / "questions_w_answers.jsonl"
    parser.add_argument("--kqa", type=Path, default=default_kqa)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "livemed-lexical-bench")
    parser.add_argument("--physician", type=Path, help="physician-labelled file (K-QA NLI CSV, ...)")
    parser.add_argument("--baseline-rev", default=BASELINE_REV)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"cpus: {os.cpu_count()}")
    paths = write_sets(args.kqa, args.out)
    old = baseline_grader(args.baseline_rev)
    graders: dict[str, Judge] = {f"old ({args.baseline_rev})": old.match, "new (HEAD)": lexical.match}
    sets: dict[str, Any] = {split: load(path) for split, path in paths.items()}
    for split in kqa_labels.SPLITS:
        report(f"K-QA {split}", sets[split], graders)
        by_kind(split, args.out / f"kqa-lexical-{split}.jsonl", graders)
    if args.physician:
        physician = load(args.physician)
        report(f"physicians: {args.physician.name}, all", physician, graders)
        for split in kqa_labels.SPLITS:
            half = [i for i in physician if kqa_labels.split_of(i.question) == split]
            report(f"physicians: {args.physician.name}, questions of the {split} split", half, graders)
    in_order = sets["heldout"]  # an answer's criteria one after another, as `livemed grade` asks them
    shuffled = random.Random(kqa_labels.SEED).sample(in_order, len(in_order))  # a new response every call
    for order, items in (("in order", in_order), ("shuffled", shuffled)):
        for name, rates in throughput(items, graders, args.repeat).items():
            spread = f"{min(rates):,.0f}–{max(rates):,.0f}"
            median = statistics.median(rates)
            print(f"throughput {name}, {order}: median {median:,.0f} grades/s ({spread}, {args.repeat} runs)")
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
