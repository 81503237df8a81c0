"""Grader agreement with human labels: macro-F1 over met / not met, Cohen's kappa, per-class P/R.

`metrics(human, predicted)` is pure (scikit-learn's implementations). `grade_items` asks a grader
for each labelled (response, criterion) item with the per-criterion prompt; a failed verdict counts
as *not met* (the scoring rule) and is counted, so a grader that cannot answer is not flattered.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from livemed.grade.grader import Judge, judge_one
from livemed.interop.labels import LabelItem
from livemed.models import Message
from livemed.records import CALL_FAILED, Criterion

CLASSES = ("met", "not met")


@dataclass(frozen=True)
class ClassStats:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class Agreement:
    n: int
    accuracy: float
    macro_f1: float
    kappa: float | None
    per_class: dict[str, ClassStats]
    failures: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "cohen_kappa": self.kappa,
            "per_class": {k: vars(v) for k, v in self.per_class.items()},
            "grader_failures": self.failures,
            "failure_reasons": self.by_reason,
        }


def metrics(human: Sequence[bool], predicted: Sequence[bool], failures: int = 0) -> Agreement:
    """Agreement of `predicted` with `human` (True = met); kappa is None when it is undefined."""
    from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_recall_fscore_support

    if len(human) != len(predicted) or not human:
        raise ValueError("need the same, non-zero number of human and predicted labels")
    y_true = [CLASSES[0] if h else CLASSES[1] for h in human]
    y_pred = [CLASSES[0] if p else CLASSES[1] for p in predicted]
    labels = list(CLASSES)
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, zero_division=0.0
    )
    per_class = {
        name: ClassStats(float(precision[i]), float(recall[i]), float(f1[i]), int(support[i]))
        for i, name in enumerate(labels)
    }
    return Agreement(
        n=len(human),
        accuracy=float(accuracy_score(y_true, y_pred)),
        macro_f1=float(sum(float(v) for v in f1) / len(labels)),
        kappa=_kappa(y_true, y_pred, cohen_kappa_score),
        per_class=per_class,
        failures=failures,
    )


def _kappa(y_true: list[str], y_pred: list[str], cohen: Any) -> float | None:
    if len(set(y_true) | set(y_pred)) < 2:
        return None  # one class only: chance agreement is 1 and kappa is 0/0
    value = float(cohen(y_true, y_pred, labels=list(CLASSES)))
    return None if math.isnan(value) else value


def _criterion(item: LabelItem) -> Criterion:
    weight = max(-10, min(10, round(item.points))) or (1 if item.points > 0 else -1)
    return Criterion(
        text=item.criterion,
        polarity="positive" if item.points > 0 else "negative",
        axis="accuracy",
        weight=weight,
        points=item.points if item.points != weight else None,
    )


async def grade_items(items: Sequence[LabelItem], judge: Judge) -> tuple[list[bool | None], dict[str, int]]:
    """The grader's verdict on each item and failure counts by reason: an unusable verdict is not met;
    an item whose grader call failed has no verdict (None) and must be left out of the metrics."""

    async def one(item: LabelItem) -> tuple[bool | None, str]:
        convo: list[Message] = [{"role": "user", "content": item.question}] if item.question else []
        outcome = await judge_one(judge, convo, item.response, _criterion(item))
        if outcome.met is None:
            return (None if outcome.reason == CALL_FAILED else False), outcome.reason
        return outcome.met, ""

    results = await asyncio.gather(*(one(item) for item in items))
    reasons: dict[str, int] = {}
    for _, reason in results:
        if reason:
            reasons[reason] = reasons.get(reason, 0) + 1
    return [met for met, _ in results], reasons
