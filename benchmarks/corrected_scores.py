"""The simulated audit study of docs/corrected-scores.md: do corrected scores cover the truth?

    .venv/bin/python benchmarks/corrected_scores.py [--runs 200] [--labels 300] [--answers 300]

Each seeded run makes a population of answers × criteria for three models (rubrics of 8 weighted
criteria on five axes, one or two of them negative), the true verdicts (a scripted physician's, who
labels what is true), and a grader that errs at known per-axis rates (false "met" and false "not met"
apart). The audit sample is drawn as `livemed review sample` draws it: `review.sample.allocate` over
the axis × grader-verdict cells, a simple random sample of each; the physician labels its items.
`score.corrected.estimate` (the code `livemed scores --corrected` runs) gives each model's corrected
mean and 95% interval, and the labels-only (classical) one beside it.

Prints, over runs × models: the corrected interval's coverage of the true mean (target ≥ 0.95),
its mean width against the classical interval's (target: narrower), the bias of the corrected and
of the classical estimate (mean error ± its standard error), and the raw (grader-only) score's mean
error, which is what the correction removes. A pure computation: no store, no timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from livemed.records import AXES
from livemed.records.review import AuditItem, AuditSample, Stratum, stratum_key
from livemed.review.sample import allocate
from livemed.score.corrected import CorrectedScore, Domain, estimate

MODELS = {"model/strong": 0.75, "model/middling": 0.55, "model/weak": 0.35}  # P(a positive is met)
NEGATIVE_MET = {"model/strong": 0.05, "model/middling": 0.12, "model/weak": 0.25}
# the grader's error rates per axis: P(says met | not met), P(says not met | met)
ERRORS = {
    "accuracy": (0.08, 0.12),
    "completeness": (0.15, 0.10),
    "communication": (0.20, 0.05),
    "context_awareness": (0.10, 0.20),
    "safety": (0.05, 0.25),
}


@dataclass
class Population:
    truth: dict[str, float]  # grade id -> the physician's verdict
    said: dict[str, bool]  # grade id -> the grader's
    cells: dict[str, list[str]]  # axis:verdict -> grade ids
    model_of: dict[str, str]  # grade id -> model
    domains: dict[tuple[str, str], Domain]
    true_mean: dict[str, float]


def population(rng: np.random.Generator, answers: int) -> Population:
    truth: dict[str, float] = {}
    said: dict[str, bool] = {}
    cells: dict[str, list[str]] = {}
    model_of: dict[str, str] = {}
    domains: dict[tuple[str, str], Domain] = {}
    true_mean: dict[str, float] = {}
    for model, quality in MODELS.items():
        domain, total = Domain(), 0.0
        for a in range(answers):
            axes = rng.choice(AXES, 8)
            weights = rng.integers(1, 11, 8).astype(float)
            negative = rng.random(8) < 0.2
            negative[0] = False  # every rubric has something to earn
            weights[negative] *= -1
            met = np.where(negative, rng.random(8) < NEGATIVE_MET[model], rng.random(8) < quality)
            positive = weights[weights > 0].sum()
            parts = []
            for k in range(8):
                grade_id = f"grade:{model}:{a}:{k}"
                false_met, false_not_met = ERRORS[str(axes[k])]
                flip = rng.random() < (false_not_met if met[k] else false_met)
                verdict = bool(met[k]) != flip
                cell = stratum_key(str(axes[k]), verdict)
                truth[grade_id], said[grade_id], model_of[grade_id] = float(met[k]), verdict, model
                cells.setdefault(cell, []).append(grade_id)
                parts.append((grade_id, weights[k] / positive, float(verdict), cell))
            domain.add(parts)
            total += float((weights * met).sum() / positive)
        domains[(model, "")] = domain
        true_mean[model] = total / answers
    return Population(truth, said, cells, model_of, domains, true_mean)


def audit(rng: np.random.Generator, pop: Population, labels: int) -> AuditSample:
    """`livemed review sample`'s design: `allocate` per cell, a simple random sample of each."""
    sizes = allocate({key: len(ids) for key, ids in pop.cells.items()}, labels)
    strata, items = [], []
    for key in sorted(pop.cells):
        axis, verdict = key.rsplit(":", 1)
        ids = pop.cells[key]
        drawn = rng.choice(len(ids), sizes[key], replace=False)
        strata.append(Stratum(axis=axis, met=verdict == "met", population=len(ids), drawn=len(drawn)))  # type: ignore[arg-type]
        for index in drawn:
            grade_id = ids[int(index)]
            items.append(
                AuditItem(grade_id=grade_id, answer_id=grade_id.rsplit(":", 1)[0], case_id="sim",
                          criterion_id=grade_id, model=pop.model_of[grade_id], stratum=key)
            )  # fmt: skip
    return AuditSample(judge="sim/grader", seed=0, strata=strata, items=items, double_share=0.0)


def one_run(seed: int, answers: int, labels: int) -> list[tuple[CorrectedScore, float]]:
    rng = np.random.default_rng(seed)
    pop = population(rng, answers)
    sample = audit(rng, pop, labels)
    physician = {item.grade_id: pop.truth[item.grade_id] for item in sample.items}
    return [
        (estimate(key, domain, sample, physician), pop.true_mean[key[0]])
        for key, domain in sorted(pop.domains.items())
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--answers", type=int, default=300, help="answers per model")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = [row for seed in range(args.runs) for row in one_run(seed, args.answers, args.labels)]
    elapsed = time.perf_counter() - start
    report(rows, args)
    print(f"wall time: {elapsed:.1f} s ({args.runs} runs)")


def report(rows: list[tuple[CorrectedScore, float]], args: argparse.Namespace) -> None:
    usable = [(r, t) for r, t in rows if r.ci_low is not None and r.classical_low is not None]
    covered = [r.ci_low <= t <= r.ci_high for r, t in usable]  # type: ignore[operator]
    classical_covered = [r.classical_low <= t <= r.classical_high for r, t in usable]  # type: ignore[operator]
    width = [r.ci_high - r.ci_low for r, _ in usable]  # type: ignore[operator]
    classical_width = [r.classical_high - r.classical_low for r, _ in usable]  # type: ignore[operator]
    n = len(usable)
    print(
        f"{args.runs} seeded runs × {len(MODELS)} models = {len(rows)} estimates ({n} with intervals); "
        f"{args.labels} labels a run, {args.answers} answers × 8 criteria per model"
    )
    print(f"labels per model: median {statistics.median(r.labels for r, _ in rows):.0f}")
    print(f"coverage of the true mean, corrected 95% interval: {sum(covered) / n:.3f} (target >= 0.95)")
    print(f"coverage, classical (labels-only) 95% interval:   {sum(classical_covered) / n:.3f}")
    ours, theirs = statistics.mean(width), statistics.mean(classical_width)
    print(f"mean width: corrected {ours:.4f}, classical {theirs:.4f} (ratio {ours / theirs:.2f}; target < 1)")
    for name, errors in (
        ("corrected", [r.corrected - t for r, t in usable]),  # type: ignore[operator]
        ("classical", [r.classical - t for r, t in usable]),  # type: ignore[operator]
        ("raw (grader only)", [r.raw - t for r, t in usable]),
    ):
        sem = statistics.stdev(errors) / len(errors) ** 0.5
        print(
            f"bias, {name:<18} {statistics.mean(errors):+.4f} ± {sem:.4f} (sd {statistics.stdev(errors):.4f})"
        )
    for model in MODELS:
        mine = [c for (r, _), c in zip(usable, covered, strict=True) if r.model == model]
        print(f"  coverage, {model:<15} {sum(mine) / len(mine):.3f} over {len(mine)} runs")


if __name__ == "__main__":
    main()
