"""Do the stored-label agreement figures hold the grader's true agreement? (run by hand; prints figures)

    PYTHONPATH=src .venv/bin/python benchmarks/reviewed_agreement.py [--runs 200] [--size 300]

A simulated grader's 20,000 verdicts on five axes (met on 70 %; a rare cell: 2 % of the verdicts), each
with the verdict a scripted physician would give (the grader right with a known probability per cell:
0.92 on met verdicts, 0.70 on not-met ones, 0.55 on the rare cell), so the grader's agreement with the
physician over *all* its verdicts is known exactly. Each run draws the audit sample as `livemed review
sample` does (`review.sample.allocate`: a floor per cell, the rest in proportion; a seeded simple random
sample in each cell), labels it with the physician's verdicts, and measures it with
`judges.reviewed.measure`. Printed: each figure's true value, the mean estimate, and how often its 95 %
interval holds the true value, weighted (what `judges agreement` reports) and unweighted (counts over
the sample). Target: the weighted accuracy's, macro-F1's and kappa's coverage at least the nominal 0.95
less two Monte Carlo standard errors over the runs (0.919 over 200 runs, 0.936 over 1,000).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from livemed.judges.confusion import table_figures
from livemed.judges.reviewed import Audit, Reviewed, measure
from livemed.records.review import stratum_key
from livemed.review.sample import allocate

AXES = ("accuracy", "completeness", "communication", "context_awareness", "safety")
FIGURES = ("accuracy", "macro_f1", "cohen_kappa")
NOMINAL = 0.95


def population(seed: int = 0) -> dict[str, list[tuple[str, bool]]]:
    """Cell → its verdicts as (grade id, the physician's verdict)."""
    rng = random.Random(seed)
    cells: dict[str, list[tuple[str, bool]]] = {}
    for i in range(20_000):
        axis = AXES[i % len(AXES)]
        rare = axis == "safety" and rng.random() < 0.1  # a met negative criterion, say
        met = rare or (axis != "safety" and rng.random() < 0.85) or (axis == "safety" and rng.random() < 0.2)
        right = rng.random() < (0.55 if rare else 0.92 if met else 0.70)
        key = stratum_key(axis, met) + (" rare" if rare else "")
        cells.setdefault(key, []).append((f"grade:{i}", met if right else not met))
    return cells


def truth(cells: dict[str, list[tuple[str, bool]]]) -> dict[str, float]:
    """The grader's figures against the physician over every verdict."""
    table = np.zeros(4)
    for key, items in cells.items():
        met = key.split(" ")[0].endswith(":met")
        for _, said in items:
            table[(0 if said else 2) + (0 if met else 1)] += 1
    return {name: float(value) for name, value in table_figures(table).items() if name in FIGURES}


def one_run(
    cells: dict[str, list[tuple[str, bool]]], size: int, seed: int, weighted: bool
) -> dict[str, dict]:
    rng = random.Random(seed)
    taken = allocate({key: len(items) for key, items in cells.items()}, size)
    items = []
    for key in sorted(cells):
        met = key.split(" ")[0].endswith(":met")
        for grade_id, said in rng.sample(cells[key], taken[key]):
            items.append(Reviewed(grade_id, key, met, (said,)))
    counts = {key: taken[key] for key in cells} if not weighted else {k: len(v) for k, v in cells.items()}
    audit = Audit("sim/grader", items, counts, len(items), 0, 0)
    return measure(audit, seed)["grader"]  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--size", type=int, default=300)
    args = parser.parse_args()
    cells = population()
    true = truth(cells)
    print(f"{sum(len(v) for v in cells.values())} verdicts in {len(cells)} cells; sample {args.size}")
    target = NOMINAL - 2 * (NOMINAL * (1 - NOMINAL) / args.runs) ** 0.5
    ok = True
    for weighted in (True, False):
        held = dict.fromkeys(FIGURES, 0)
        estimates: dict[str, list[float]] = {name: [] for name in FIGURES}
        widths: dict[str, list[float]] = {name: [] for name in FIGURES}
        for seed in range(args.runs):
            got = one_run(cells, args.size, seed, weighted)
            for name in FIGURES:
                figure = got[name]
                estimates[name].append(figure["value"])
                widths[name].append(figure["high"] - figure["low"])
                held[name] += figure["low"] <= true[name] <= figure["high"]
        label = "weighted (judges agreement)" if weighted else "unweighted (counts over the sample)"
        print(label)
        for name in FIGURES:
            coverage = held[name] / args.runs
            print(
                f"  {name:12} true {true[name]:.3f}  mean estimate {np.mean(estimates[name]):.3f}  "
                f"mean 95% width {np.mean(widths[name]):.3f}  coverage {coverage:.3f}"
            )
            if weighted and coverage < target:
                ok = False
    print(f"target: weighted coverage >= {target:.3f} for every figure: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
