"""The app's `/results` page: labels per reviewer, the grader's agreement with the reviewers, and the
scores corrected by their labels (computed in `judges/reviewed.py` and `score/corrected.py`; shown here).

Each section says why it is empty (no audit sample, no labels yet) rather than show a number it has not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from livemed.errors import UserError
from livemed.judges.certification import shown
from livemed.judges.reviewed import agreement_rows, notes, reviewed_agreement
from livemed.records import Label
from livemed.review.queues import audit_sample, label_key
from livemed.score.corrected import corrected_scores
from livemed.store import Store

AGREEMENT_COLUMNS = ["comparison", "macro-F1", "Cohen's kappa", "accuracy"]
CORRECTED_COLUMNS = ["model", "answers", "raw", "corrected [95% CI]", "labels only [95% CI]", "labels"]


def review_results(store: Store, judge: str | None) -> Mapping[str, Any]:
    """The sections of `/results` for the grader under audit (the only audit sample when `judge` is None)."""
    sections = list(label_counts(store, judge)["sections"])
    try:
        grader = audit_sample(store, judge).judge
    except UserError as exc:
        note = str(exc)
        return {"sections": [*sections, _empty("Agreement with the reviewers", note)]}
    sections.append(_agreement(store, grader))
    sections.append(_corrected(store, grader))
    return {"sections": sections}


def label_counts(store: Store, judge: str | None) -> Mapping[str, Any]:
    """The default of `/results`: how many labels each reviewer gave in each queue."""
    counts = Counter((queue, reviewer) for queue, _, reviewer in map(label_key, store.ids(Label.kind)))
    rows = [[queue, reviewer, str(n)] for (queue, reviewer), n in sorted(counts.items())]
    section = {"title": "Labels", "columns": ["queue", "reviewer", "labels"], "rows": rows, "note": ""}
    return {"sections": [section]}


def _empty(title: str, note: str) -> dict[str, Any]:
    return {"title": title, "columns": [], "rows": [], "note": note}


def _agreement(store: Store, judge: str) -> dict[str, Any]:
    title = f"Agreement of {judge} with the reviewers"
    try:
        data = reviewed_agreement(store, judge)
    except UserError as exc:
        return _empty(title, str(exc))
    rows = [
        [name, shown(f["macro_f1"]), shown(f["cohen_kappa"]), shown(f["accuracy"])]
        for name, f, _ in agreement_rows(data)
    ]
    return {"title": title, "columns": AGREEMENT_COLUMNS, "rows": rows, "note": " · ".join(notes(data))}


def _corrected(store: Store, judge: str) -> dict[str, Any]:
    title = f"Scores by {judge} corrected by the reviewers' labels (unclipped means)"
    try:
        result = corrected_scores(store, judge)
    except UserError as exc:
        return _empty(title, str(exc))
    rows = [
        [
            s.model,
            str(s.answers),
            f"{s.raw:.3f}",
            _interval(s.corrected, s.ci_low, s.ci_high),
            _interval(s.classical, s.classical_low, s.classical_high),
            str(s.labels),
        ]
        for s in result.scores
    ]
    few = [f"{s.model}: {s.too_few}" for s in result.scores if s.too_few]
    note = f"{result.labelled} of {result.sampled} sampled verdicts labelled"
    note += "".join(f" · {line}" for line in few)
    return {"title": title, "columns": CORRECTED_COLUMNS, "rows": rows, "note": note}


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "–"
    if low is None or high is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"
