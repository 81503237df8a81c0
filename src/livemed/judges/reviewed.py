"""A grader's stored verdicts against the reviewers' stored labels on its audit sample (no model calls).

The items are those of the grader's `AuditSample` (`audit_sample:{judge}`) with a *met* or *not met*
`Label` of the audit queue (*unsure* is no verdict on the criterion and is left out, counted), read
from the store: the grade's stored verdict is the grader's, the labels the reviewers'. A sampled item
whose grade is gone or whose verdict is no longer the one it was drawn with is left out (counted): its
cell, and so its weight, is no longer known.

The sample over-draws the small cells (axis × grader verdict), so plain counts over it would weigh a
rare cell (a met negative criterion) as much as a common one. Every figure here is therefore
*weighted to the grader's verdicts*: an item of cell s weighs N_s / n_s, the cell's population over its
items in that comparison (the labelled items of a cell taken as a random subset of its drawn ones, as
`score/corrected.py` takes them), so each figure estimates what it would be over all the grader's
verdicts. A cell without a labelled item is not represented (named in `unlabelled`). n is the number of
items, unweighted. An item labelled by two reviewers counts each label at half its weight.

Figures: accuracy, macro-F1 over met / not met, Cohen's kappa and per-class precision / recall, each
with the percentile interval of a stratified bootstrap over items (`judges/confusion.py` over
`common.stats.stratified_bootstrap_sums`: each cell's items resampled within it, Rao and Wu's rescaled
draw of n − 1, so the weights stay fixed and a small cell's spread is not understated), overall
and per axis; beside them what two trivial graders get on the same items and weights: one that always
says *met*, and one that always gives the reviewers' majority verdict. Reviewer against reviewer: the
first two labels of each item labelled twice, the same figures over a symmetric table (each pair
counted both ways, so it does not matter which reviewer labelled first: its kappa is Fleiss' for two
ratings an item), and the grader against the reviewers on those same items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.common.stats import FloatArray
from livemed.errors import UserError
from livemed.judges.confusion import MM, MN, NM, NN, Figure, Tables, always, tables
from livemed.records import AuditSample, Grade, Label, utcnow
from livemed.store import Store

AUDIT_VERDICTS = {"met": True, "not met": False}  # "unsure" is not a verdict on the criterion
SOURCE = "audit labels"  # `source` of a stored result made from the store's labels (not a label file)
WEIGHTING = "weighted to the grader's verdicts (cell population / labelled items of the cell)"
ALWAYS_MET = "always met"
FIGURES = ("accuracy", "macro_f1", "cohen_kappa")


class _Verdict(TypedDict):
    met: bool


_GRADE = TypeAdapter(_Verdict)


@dataclass(frozen=True)
class Reviewed:
    """A sampled grade with its reviewers' verdicts (oldest first)."""

    grade_id: str
    cell: str  # the sample's stratum, `axis:met` / `axis:not met`
    grader_met: bool
    labels: tuple[bool, ...]

    @property
    def axis(self) -> str:
        return self.cell.rsplit(":", 1)[0]


@dataclass(frozen=True)
class Audit:
    """What the store holds for one grader's audit: its labelled items and the sample's cells."""

    judge: str
    items: list[Reviewed]
    population: dict[str, int]
    sampled: int
    unsure: int  # items whose only labels are unsure
    stale: int  # labelled items whose grade is gone or changed since the draw


def load_audit(store: Store, judge: str) -> Audit:
    """The grader's labelled audit items; a one-line UserError without a sample or without labels."""
    from livemed.score.corrected import sample_hint

    sample = store.get(AuditSample, f"audit_sample:{judge}")
    if sample is None:
        raise UserError(f"no audit sample for grader {judge!r}: draw one with {sample_hint(judge)}")
    cells = {item.grade_id: item.stratum for item in sample.items}
    labels: dict[str, list[Label]] = defaultdict(list)
    for label in store.by_parents(Label, sorted(cells)):
        if label.queue == "audit":
            labels[label.item_id].append(label)
    verdicts = dict(store.fields_many(Grade.kind, sorted(labels), _GRADE))
    items, unsure, stale = [], 0, 0
    for grade_id, found in sorted(labels.items()):
        said = [AUDIT_VERDICTS[x.verdict] for x in sorted(found, key=_when) if x.verdict in AUDIT_VERDICTS]
        view = verdicts.get(grade_id)
        if not said:
            unsure += 1
        elif view is None or view["met"] != cells[grade_id].endswith(":met"):  # gone, or graded again
            stale += 1
        else:
            items.append(Reviewed(grade_id, cells[grade_id], view["met"], tuple(said)))
    if not items:
        raise UserError(
            f"no met / not met labels on the audit sample of grader {judge!r} yet ({len(sample.items)} "
            f"items; {unsure} unsure, {stale} changed): label them in the review app first"
        )
    population = {stratum.key: stratum.population for stratum in sample.strata}
    return Audit(judge, items, population, len(sample.items), unsure, stale)


def _when(label: Label) -> tuple[Any, str]:
    return label.labelled_at, label.reviewer


def _word(met: bool) -> str:
    return "met" if met else "not met"


def grader_row(item: Reviewed) -> FloatArray:
    """One item's 2×2 row: each reviewer label at 1/k, in the grader's verdict column."""
    share = sum(item.labels) / len(item.labels)
    row = np.zeros(4)
    row[MM if item.grader_met else MN] = share
    row[NM if item.grader_met else NN] = 1.0 - share
    return row


def reviewers_row(item: Reviewed) -> FloatArray:
    """The first two labels of an item as a symmetric 2×2 row (a disagreement half each way)."""
    first, second = item.labels[0], item.labels[1]
    row = np.zeros(4)
    if first == second:
        row[MM if first else NN] = 1.0
    else:
        row[MN] = row[NM] = 0.5
    return row


def _dicts(figures: dict[str, Figure], names: Sequence[str] = FIGURES) -> dict[str, Any]:
    return {name: figures[name].as_dict() for name in names}


def comparison(t: Tables) -> dict[str, Any]:
    """A comparison's figures, per-class precision and recall, and the trivial graders' figures."""
    figures = t.figures()
    majority = f"majority ({_word(t.majority_met)})"
    per_class = {
        cls: {part: figures[f"{cls} {part}"].as_dict() for part in ("precision", "recall")}
        for cls in ("met", "not met")
    }
    trivial = {
        ALWAYS_MET: _dicts(t.figures(always(True))),
        majority: _dicts(t.figures(always(t.majority_met))),
    }
    return {"n": t.n, "labels": t.labels, **_dicts(figures), "per_class": per_class, "trivial": trivial}


def _grader_tables(audit: Audit, items: Sequence[Reviewed], seed: int) -> Tables:
    rows = [grader_row(item) for item in items]
    labels = sum(len(item.labels) for item in items)
    return tables(rows, [item.cell for item in items], audit.population, labels, seed)


def _reviewers(audit: Audit, seed: int) -> dict[str, Any] | None:
    """Reviewer against reviewer on the items labelled twice, and the grader on those items."""
    doubles = [item for item in audit.items if len(item.labels) >= 2]
    if not doubles:
        return None
    rows = [reviewers_row(item) for item in doubles]
    t = tables(rows, [item.cell for item in doubles], audit.population, 2 * len(doubles), seed)
    figures = t.figures()
    grader = _grader_tables(audit, doubles, seed).figures()
    return {
        "n": t.n,
        "agreement": figures["accuracy"].as_dict(),
        "cohen_kappa": figures["cohen_kappa"].as_dict(),
        "macro_f1": figures["macro_f1"].as_dict(),
        "grader": _dicts(grader),
    }


def measure(audit: Audit, seed: int = 0) -> dict[str, Any]:
    """Every figure of the grader's audit (the module docstring), as the dict `judges agreement` stores
    (its `n`, `accuracy`, `macro_f1` and `cohen_kappa` are the overall values, as a label file's are)."""
    overall = comparison(_grader_tables(audit, audit.items, seed))
    by_axis: dict[str, list[Reviewed]] = defaultdict(list)
    for item in audit.items:
        by_axis[item.axis].append(item)
    labelled = {item.cell for item in audit.items}
    return {
        "source": SOURCE,
        "judge": audit.judge,
        "measured_at": utcnow().isoformat(),
        "weighting": WEIGHTING,
        "sampled": audit.sampled,
        "unsure": audit.unsure,
        "stale": audit.stale,
        "unlabelled": sorted(c for c, n in audit.population.items() if n and c not in labelled),
        "n": overall["n"],
        "accuracy": overall["accuracy"]["value"],
        "macro_f1": overall["macro_f1"]["value"],
        "cohen_kappa": overall["cohen_kappa"]["value"],
        "grader": overall,
        "axes": {
            axis: comparison(_grader_tables(audit, rows, seed)) for axis, rows in sorted(by_axis.items())
        },
        "reviewers": _reviewers(audit, seed),
    }


def reviewed_agreement(store: Store, judge: str, seed: int = 0) -> dict[str, Any]:
    """`measure(load_audit(store, judge))`: a UserError without a sample or labels."""
    return measure(load_audit(store, judge), seed)


def summary(data: dict[str, Any]) -> str:
    """One line: the grader against the reviewers, the trivial graders, reviewer against reviewer."""
    from livemed.judges.certification import shown

    grader = data["grader"]
    trivial = "; ".join(f"{name} {shown(f['macro_f1'])}" for name, f in grader["trivial"].items())
    line = (
        f"vs reviewers macro-F1 {shown(grader['macro_f1'])}, kappa {shown(grader['cohen_kappa'])} "
        f"(trivial: {trivial})"
    )
    reviewers = data.get("reviewers")
    if reviewers:
        line += (
            f"; reviewer vs reviewer kappa {shown(reviewers['cohen_kappa'])}, "
            f"agreement {shown(reviewers['agreement'])}"
        )
    else:
        line += "; no item labelled by two reviewers yet"
    return line


def agreement_rows(data: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """The comparisons in the order the CLI and the report show them: (name, figures, trivial?)."""
    grader = data["grader"]
    rows: list[tuple[str, dict[str, Any], bool]] = []
    for scope, figures in (("all axes", grader), *((f"axis {a}", f) for a, f in data["axes"].items())):
        rows.append((f"grader vs reviewers, {scope}", figures, False))
        rows.extend((f"trivial: {name}", trivial, True) for name, trivial in figures["trivial"].items())
    reviewers = data["reviewers"]
    if reviewers:
        pair = {**reviewers, "accuracy": reviewers["agreement"]}
        rows.append(("reviewer vs reviewer, items labelled twice (accuracy: share agreeing)", pair, False))
        rows.append(("grader vs reviewers, the same items", reviewers["grader"], False))
    return rows


def notes(data: dict[str, Any]) -> list[str]:
    """What the figures leave out, one line each."""
    out = []
    if not data["reviewers"]:
        out.append("no item is labelled by two reviewers yet: no reviewer-vs-reviewer agreement")
    if data["unsure"]:
        out.append(f"{data['unsure']} item(s) labelled unsure only: left out")
    if data["stale"]:
        out.append(
            f"{data['stale']} labelled item(s) whose grade changed or is gone since the draw: left out"
        )
    if data["unlabelled"]:
        out.append(f"cells without a label (not represented): {', '.join(data['unlabelled'])}")
    return out


@dataclass(frozen=True)
class ReviewedView:
    """What the report shows of a grader's audit: its figures, or why there are none yet."""

    judge: str
    data: dict[str, Any] | None
    why_none: str = ""

    @property
    def rows(self) -> list[tuple[str, dict[str, Any], bool]]:
        return agreement_rows(self.data) if self.data else []

    @property
    def notes(self) -> list[str]:
        return notes(self.data) if self.data else []


def report_view(store: Store, judge: str | None) -> ReviewedView | None:
    """The grader's agreement with the reviewers now (None: no audit sample of it)."""
    if not judge or store.get(AuditSample, f"audit_sample:{judge}") is None:
        return None
    try:
        return ReviewedView(judge, reviewed_agreement(store, judge))
    except UserError as exc:
        return ReviewedView(judge, None, str(exc))
