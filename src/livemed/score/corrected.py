"""Scores corrected for grader error by the reviewers' labels on the grader's audit sample.

The estimand: a model's mean score had every verdict been the reviewers'. An answer's score
Σ w_c·met_c / P_a (P_a: its rubric's positive weight) is linear in the verdicts, so the model's mean
over its A_m answers is a weighted total Σ_i v_i·h_i over its graded criteria, v_i = w_c / (P_a·A_m).
The clip at 0 of the livemed convention is not linear: it binds only where met negative criteria
outweigh met positive ones, and both the raw and the corrected figures here are the *unclipped* mean
(HealthBench's per-case score; `clipped` counts the answers where the clip would bind).

The audit sample (`AuditSample`) is a simple random sample of each cell (axis × grader verdict),
with known sizes; the labelled items of a cell are taken as a random subset of its drawn ones
(unsure and unlabelled items missing at random within the cell). Then `stratified.estimate_total`
with λ = 1 (the prediction-powered difference estimator)

    θ̂_m = Σ_{i∈m} v_i f_i + Σ_s (N_s/n_s) Σ_{i∈L_s} v_i (h_i − f_i)·1[i∈m]

is unbiased by design, with a per-cell variance (finite-population corrected); λ = 0 gives the
classical labels-only estimate beside it. λ is not tuned: within a cell the grader's verdict is the
same for every item, so the power-tuned λ of PPI++ could only use the weights' spread, and its
estimate from the labels would cost exact unbiasedness. A double-reviewed item's h is the mean of
its two labels. `too_few` says why an interval is not useful: fewer than `MIN_LABELS` labels on the
domain's items, or a cell holding them with fewer than two labels (and not labelled whole).

docs/corrected-scores.md states the design, the assumptions and the benchmark.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.errors import UserError
from livemed.records import Answer, AuditSample, Grade, Label, Rubric
from livemed.records.review import stratum_key
from livemed.score.stage import _RUBRIC, _Prepared
from livemed.score.stratified import Cell, Estimate, estimate_total
from livemed.store import Store

MIN_LABELS = 30
AUDIT_VERDICTS = {"met": 1.0, "not met": 0.0}  # "unsure" is no verdict on the criterion


def sample_hint(judge: str) -> str:
    return f"`livemed review sample --judge {judge} --size 300`"


@dataclass(frozen=True)
class CorrectedScore:
    """One model's mean score (on one axis, or overall when `axis` is ''): the grader's (raw), the one
    corrected by the labels with its 95% interval, and the labels-only (classical) one with its."""

    model: str
    axis: str
    answers: int
    raw: float
    corrected: float | None
    ci_low: float | None
    ci_high: float | None
    classical: float | None
    classical_low: float | None
    classical_high: float | None
    labels: int  # labelled audit items on this model's (axis') criteria
    too_few: str = ""  # why the interval is not useful; '' when it is


@dataclass(frozen=True)
class CorrectedScores:
    judge: str
    sampled: int  # items in the audit sample
    labelled: int  # of them with a met / not met label
    scores: list[CorrectedScore]
    by_axis: list[CorrectedScore] = field(default_factory=list)
    clipped: dict[str, int] = field(default_factory=dict)  # per model: answers with a negative raw score
    min_labels: int = MIN_LABELS


class _GradeView(TypedDict):
    answer_id: str
    criterion_id: str
    judge: str
    met: bool


class _AnswerView(TypedDict):
    case_id: str
    model: str


class _LabelView(TypedDict):
    queue: str
    item_id: str
    verdict: str


_GRADE, _ANSWER, _LABEL = TypeAdapter(_GradeView), TypeAdapter(_AnswerView), TypeAdapter(_LabelView)


@dataclass
class Domain:
    """A model's (axis') criteria: grade id → w/P; per cell, Σ w/P·verdict and how many; its answers."""

    shares: dict[str, float] = field(default_factory=dict)
    known: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    members: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    answers: int = 0

    def add(self, parts: list[tuple[str, float, float, str]]) -> None:
        self.answers += 1
        for grade_id, share, verdict, cell in parts:
            self.shares[grade_id] = share
            self.known[cell] += share * verdict
            self.members[cell] += 1


def require_sample(store: Store, judge: str) -> AuditSample:
    """`judge`'s audit sample; a UserError naming the command that draws one when there is none."""
    sample = store.get(AuditSample, f"audit_sample:{judge}")
    if sample is None:
        raise UserError(f"no audit sample for grader {judge!r}: draw one with {sample_hint(judge)}")
    return sample


def has_audit_labels(store: Store, judge: str) -> bool:
    """Whether `judge` has an audit sample with at least one met / not met label."""
    sample = store.get(AuditSample, f"audit_sample:{judge}")
    return sample is not None and bool(_labels(store, sample))


@dataclass(frozen=True)
class Frame:
    """What the correction reads from the grades (every verdict of the judge, its answers and their
    rubrics), checked against the audit sample's frame: the labels are applied to it afresh each time."""

    sample: AuditSample
    domains: dict[tuple[str, str], Domain]
    clipped: dict[str, int]


FRAME_KINDS = (Grade.kind, Answer.kind, Rubric.kind, AuditSample.kind)  # what `scored_frame` reads


def scored_frame(store: Store, judge: str, *, answer_ids: Collection[str] | None = None) -> Frame:
    """The judge's sample and the (model, axis) domains of its verdicts (over the answers fully graded
    by it, or those of `answer_ids`). UserError without a sample, or when verdicts were written after
    it was drawn (they were not in its frame). It changes only when `FRAME_KINDS` records do."""
    sample = require_sample(store, judge)
    domains, clipped = _domains(store, judge, answer_ids)
    _check_frame(store, sample, domains)
    return Frame(sample, domains, clipped)


def corrected_scores(
    store: Store,
    judge: str,
    *,
    answer_ids: Collection[str] | None = None,
    min_labels: int = MIN_LABELS,
    frame: Frame | None = None,
) -> CorrectedScores:
    """Each model's mean score by `judge` corrected by the labels on its audit sample (see
    `scored_frame`; `frame`: one made already, from the store as it is now)."""
    frame = frame or scored_frame(store, judge, answer_ids=answer_ids)
    labels = _labels(store, frame.sample)
    rows = {
        key: estimate(key, domain, frame.sample, labels, min_labels) for key, domain in frame.domains.items()
    }
    return CorrectedScores(
        judge=judge,
        sampled=len(frame.sample.items),
        labelled=len(labels),
        scores=[rows[key] for key in sorted(rows) if key[1] == ""],
        by_axis=[rows[key] for key in sorted(rows) if key[1] != ""],
        clipped=frame.clipped,
        min_labels=min_labels,
    )


def _labels(store: Store, sample: AuditSample) -> dict[str, float]:
    """Sampled grade id → the reviewers' verdict (1 met, 0 not met; the mean of two reviewers')."""
    found: dict[str, list[float]] = defaultdict(list)
    ids = [item.grade_id for item in sample.items]
    for _, view in store.fields_by_parents(Label.kind, ids, _LABEL):
        if view["queue"] == "audit" and view["verdict"] in AUDIT_VERDICTS:
            found[view["item_id"]].append(AUDIT_VERDICTS[view["verdict"]])
    return {grade_id: sum(hs) / len(hs) for grade_id, hs in found.items()}


def _domains(
    store: Store, judge: str, answer_ids: Collection[str] | None
) -> tuple[dict[tuple[str, str], Domain], dict[str, int]]:
    """(model, axis or '') → its criteria and answers, over the answers fully graded by `judge`."""
    verdicts: dict[str, dict[str, bool]] = defaultdict(dict)
    for _, grade in store.fields(Grade.kind, _GRADE):
        if grade["judge"] == judge and (answer_ids is None or grade["answer_id"] in answer_ids):
            verdicts[grade["answer_id"]][grade["criterion_id"]] = grade["met"]
    answers = dict(store.fields_many(Answer.kind, sorted(verdicts), _ANSWER))
    cases = sorted({view["case_id"] for view in answers.values()})
    rubrics = dict(store.fields_many(Rubric.kind, [f"rubric:{c}" for c in cases], _RUBRIC))
    domains: dict[tuple[str, str], Domain] = defaultdict(Domain)
    clipped: dict[str, int] = defaultdict(int)
    for answer_id, view in sorted(answers.items()):
        rubric = rubrics.get(f"rubric:{view['case_id']}")
        if rubric is None:
            continue
        prepared = _Prepared.of_view(rubric)
        cells = [c["axis"] for c in rubric["criteria"]]
        met = verdicts[answer_id]
        if not prepared.positive or any(i not in met for i in prepared.ids):
            continue  # nothing to earn, or not fully graded: no score
        groups = (("", tuple(range(len(prepared.ids)))), *prepared.axes)
        for axis, indices in groups:
            parts = list(_parts(prepared, indices, met, cells, answer_id, judge))
            if parts:
                domains[(view["model"], axis)].add(parts)
        if sum(prepared.values[k] for k, i in enumerate(prepared.ids) if met[i]) < 0:
            clipped[view["model"]] += 1
    return dict(domains), dict(clipped)


def _parts(
    prepared: _Prepared,
    indices: tuple[int, ...],
    met: dict[str, bool],
    cells: list[str],
    answer_id: str,
    judge: str,
) -> Iterator[tuple[str, float, float, str]]:
    """The criteria at `indices` as (grade id, w/P, verdict, cell); none without positive weight."""
    total = sum(prepared.values[k] for k in indices if prepared.values[k] > 0)
    if total <= 0:
        return
    for k in indices:
        criterion_id = prepared.ids[k]
        verdict = met[criterion_id]
        cell = stratum_key(cells[k], verdict)
        yield f"grade:{answer_id}:{criterion_id}:{judge}", prepared.values[k] / total, float(verdict), cell


def _check_frame(store: Store, sample: AuditSample, domains: dict[tuple[str, str], Domain]) -> None:
    """Every scored verdict must have been in the sample's frame: in one of its cells, and written
    before it was drawn (a verdict written since had no chance of being drawn)."""
    cells = {s.key: s.population for s in sample.strata}
    whole = [d for (_, axis), d in domains.items() if axis == ""]  # every scored verdict, once
    again = f"draw it again with {sample_hint(sample.judge)}"
    members: dict[str, int] = defaultdict(int)
    for domain in whole:
        for cell, count in domain.members.items():
            members[cell] += count
    for cell, count in sorted(members.items()):
        if count > cells.get(cell, 0):
            raise UserError(
                f"the audit sample of {sample.judge!r} holds {cells.get(cell, 0)} verdicts of {cell} "
                f"and the store {count}: {again}"
            )
    ids = sorted(i for d in whole for i in d.shares)
    drawn = sample.drawn_at.astimezone(UTC).replace(tzinfo=None)
    newer = sum(moment > drawn for moment in store.updated_at(Grade.kind, ids).values())
    if newer:
        raise UserError(
            f"{newer} verdict(s) of {sample.judge!r} were written after its audit sample was drawn "
            f"({sample.drawn_at:%Y-%m-%d %H:%M} UTC): {again}"
        )


def estimate(
    key: tuple[str, str],
    domain: Domain,
    sample: AuditSample,
    labels: dict[str, float],
    min_labels: int = MIN_LABELS,
) -> CorrectedScore:
    """One domain's (model, axis or '') raw, corrected and labels-only mean from `sample`'s design and
    `labels` (sampled grade id → reviewers' verdict in [0, 1])."""
    labelled: dict[str, list[str]] = defaultdict(list)
    for item in sample.items:
        if item.grade_id in labels:
            labelled[item.stratum].append(item.grade_id)
    cells = []
    for stratum in sample.strata:
        ids = labelled[stratum.key]
        weights = [domain.shares.get(grade_id, 0.0) / domain.answers for grade_id in ids]
        f = 1.0 if stratum.met else 0.0
        cells.append(
            Cell(
                population=stratum.population,
                known=domain.known.get(stratum.key, 0.0) / domain.answers,
                y=tuple(w * labels[grade_id] for w, grade_id in zip(weights, ids, strict=True)),
                x=tuple(w * f for w in weights),
                members=domain.members.get(stratum.key, 0),
            )
        )
    corrected, classical = estimate_total(cells, lam=1.0), estimate_total(cells, lam=0.0)
    used = sum(1 for grade_id in labels if grade_id in domain.shares)
    return CorrectedScore(
        model=key[0],
        axis=key[1],
        answers=domain.answers,
        raw=sum(cell.known for cell in cells),
        corrected=_value(corrected),
        ci_low=_low(corrected),
        ci_high=_high(corrected),
        classical=_value(classical),
        classical_low=_low(classical),
        classical_high=_high(classical),
        labels=used,
        too_few=_too_few(cells, corrected, used, min_labels),
    )


def _value(estimate: Estimate | None) -> float | None:
    return None if estimate is None else estimate.value


def _low(estimate: Estimate | None) -> float | None:
    return None if estimate is None else estimate.ci_low


def _high(estimate: Estimate | None) -> float | None:
    return None if estimate is None else estimate.ci_high


def _too_few(cells: list[Cell], estimate: Estimate | None, used: int, min_labels: int) -> str:
    if estimate is None:
        return "a stratum holding its verdicts has no label"
    if used < min_labels:
        return f"{used} label(s), fewer than {min_labels}"
    if estimate.se is None:
        return "a stratum holding its verdicts has a single label"
    thin = [c for c in cells if c.members and c.labelled < 2 and c.labelled < c.population]
    return "a stratum holding its verdicts has fewer than 2 labels" if thin else ""
