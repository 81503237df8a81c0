"""Changing graders without losing comparability: the same stored slice graded by judges A and B —
per-criterion agreement (macro-F1, Cohen's kappa, B against A), each model's score shift B − A with a
paired bootstrap interval, and rank changes."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from livemed.common.stats import bootstrap_paired_diff, finite_or_none
from livemed.grade.grader import Target, grade_id
from livemed.judges.agreement import metrics
from livemed.records import Grade, GradeFailure
from livemed.score import formula as S


def sample_targets(targets: Sequence[Target], n: int | None, seed: int) -> list[Target]:
    """A seeded sample of `n` targets (all when None), in a stable order."""
    ordered = sorted(targets, key=lambda t: t.answer.id)
    if n is None or n >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, n), key=lambda t: t.answer.id)


def target_ids(target: Target, judge: str) -> list[str]:
    return [grade_id(target.answer.id, c.id, judge) for c in target.rubric.criteria]


@dataclass
class Comparison:
    judge_a: str
    judge_b: str
    criteria: dict[str, Any] = field(default_factory=dict)
    models: list[dict[str, Any]] = field(default_factory=list)
    answers: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge_a": self.judge_a,
            "judge_b": self.judge_b,
            "answers": self.answers,
            "criteria": self.criteria,
            "models": self.models,
        }


def _score(target: Target, grades: dict[str, Grade | GradeFailure], judge: str) -> float | None:
    items = []
    for criterion, gid in zip(target.rubric.criteria, target_ids(target, judge), strict=True):
        found = grades.get(gid)
        met = found.met if isinstance(found, Grade) else None
        items.append(S.Item(weight=criterion.value, met=met, axis=criterion.axis))
    return S.case_score(items)


def _ranks(means: dict[str, float]) -> dict[str, int]:
    return {m: n for n, (m, _) in enumerate(sorted(means.items(), key=lambda kv: (-kv[1], kv[0])), start=1)}


def compare(
    targets: Sequence[Target],
    grades: dict[str, Grade | GradeFailure],
    judge_a: str,
    judge_b: str,
    *,
    seed: int = 0,
    resamples: int = 2000,
) -> Comparison:
    """Agreement, shifts and ranks over `targets`, from both judges' stored grades (`grades` by id)."""
    out = Comparison(judge_a, judge_b, answers=len(targets))
    a_met, b_met = [], []
    for target in targets:
        for ga, gb in zip(target_ids(target, judge_a), target_ids(target, judge_b), strict=True):
            x, y = grades.get(ga), grades.get(gb)
            if isinstance(x, Grade) and isinstance(y, Grade):
                a_met.append(x.met)
                b_met.append(y.met)
    if a_met:
        agreement = metrics(a_met, b_met)
        out.criteria = {"n": agreement.n, "macro_f1": agreement.macro_f1, "kappa": agreement.kappa}
        out.criteria["accuracy"] = agreement.accuracy
    paired: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for target in targets:
        sa, sb = _score(target, grades, judge_a), _score(target, grades, judge_b)
        if sa is not None and sb is not None:
            paired[target.answer.model][0].append(sa)
            paired[target.answer.model][1].append(sb)
    means_a = {m: fmean(a) for m, (a, _) in paired.items()}
    means_b = {m: fmean(b) for m, (_, b) in paired.items()}
    ranks_a, ranks_b = _ranks(means_a), _ranks(means_b)
    for model, (a, b) in sorted(paired.items()):
        shift = bootstrap_paired_diff(b, a, resamples=resamples, seed=seed)
        out.models.append(
            {
                "model": model,
                "n": len(a),
                "score_a": means_a[model],
                "score_b": means_b[model],
                "shift": finite_or_none(shift.estimate),
                "ci_low": finite_or_none(shift.low),
                "ci_high": finite_or_none(shift.high),
                "rank_a": ranks_a[model],
                "rank_b": ranks_b[model],
            }
        )
    return out
