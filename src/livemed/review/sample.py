"""The audit sample: one grader's verdicts drawn at random, stratified by axis and by verdict.

Each cell (axis × met / not met) is a simple random sample without replacement: its items are ranked
by a seeded hash of their grade id and the lowest-ranked are drawn. So each item's inclusion
probability is its cell's drawn / population (kept on the record), which makes the correction of
`score/corrected.py` unbiased; and a larger sample with the same seed keeps every item of a smaller
one whose cell did not shrink. Each cell gets at least `floor` items (or all it has), the rest
proportionally to its size, so a rare cell (a met negative criterion) is not left out.
A share of the items (`double_share`, seeded too) is marked for a second reviewer.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterator

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.errors import UserError
from livemed.records import AXES, Answer, Grade, Rubric
from livemed.records.grading import criterion_key_id
from livemed.records.review import AuditItem, AuditSample, Stratum, stratum_key
from livemed.rubrics.versions import latest_versions
from livemed.store import Store


class _GradeView(TypedDict):
    answer_id: str
    case_id: str
    criterion_id: str
    judge: str
    met: bool


class _AnswerView(TypedDict):
    model: str


class _CriterionView(TypedDict):
    text: str
    axis: str
    weight: int


class _RubricView(TypedDict):
    criteria: list[_CriterionView]


_GRADE = TypeAdapter(_GradeView)
_ANSWER = TypeAdapter(_AnswerView)
_RUBRIC = TypeAdapter(_RubricView)


def draw_sample(
    store: Store, judge: str, size: int, *, seed: int = 0, double_share: float = 0.1
) -> AuditSample:
    """A stratified random sample of `size` of `judge`'s verdicts (fewer if it has fewer)."""
    cells = _cells(store, judge)
    if not cells:
        raise UserError(f"no verdicts of grader {judge!r} in the store: grade the answers with it first")
    allocation = allocate({key: len(items) for key, items in cells.items()}, size)
    items: list[AuditItem] = []
    strata: list[Stratum] = []
    for key in sorted(cells):
        axis, verdict = key.rsplit(":", 1)
        ranked = sorted(cells[key], key=lambda item: _rank(seed, "draw", item.grade_id))
        drawn = ranked[: allocation[key]]
        strata.append(Stratum(axis=axis, met=verdict == "met", population=len(ranked), drawn=len(drawn)))
        items.extend(drawn)
    doubled = [
        item.model_copy(update={"double": _rank(seed, "double", item.grade_id) < double_share})
        for item in items
    ]
    return AuditSample(judge=judge, seed=seed, strata=strata, items=doubled, double_share=double_share)


def allocate(populations: dict[str, int], size: int) -> dict[str, int]:
    """How many items each cell gets: all of a cell when the sample takes everything; else at least
    `floor` = size / (4 × cells) each (or all a cell has), the rest in proportion to the cells' sizes."""
    if size < 1:
        raise UserError("an audit sample needs a size of at least 1")
    total = sum(populations.values())
    if size >= total:
        return dict(populations)
    floor = max(1, size // (4 * len(populations)))
    taken = {key: min(n, floor) for key, n in populations.items()}
    left = size - sum(taken.values())
    rest = {key: n - taken[key] for key, n in populations.items()}
    spare = sum(rest.values())
    shares = {key: left * n / spare if spare else 0.0 for key, n in rest.items()}
    for key in populations:
        taken[key] += min(rest[key], math.floor(shares[key]))
    by_remainder = sorted(populations, key=lambda k: (-(shares[k] - math.floor(shares[k])), k))
    for key in by_remainder:  # the items rounding left over, largest remainders first
        if sum(taken.values()) >= size:
            break
        if taken[key] < populations[key]:
            taken[key] += 1
    return taken


def _rank(seed: int, purpose: str, grade_id: str) -> float:
    digest = hashlib.sha256(f"{seed}\x1f{purpose}\x1f{grade_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _cells(store: Store, judge: str) -> dict[str, list[AuditItem]]:
    graded = [(gid, view) for gid, view in store.fields(Grade.kind, _GRADE) if view["judge"] == judge]
    models = dict(_models(store, sorted({view["answer_id"] for _, view in graded})))
    axes = dict(_axes(store, sorted({view["case_id"] for _, view in graded})))
    cells: dict[str, list[AuditItem]] = defaultdict(list)
    for grade_id, view in graded:
        axis = axes.get((view["case_id"], view["criterion_id"]))
        model = models.get(view["answer_id"])
        if axis is None or model is None:
            continue  # its rubric changed or its answer is gone: not a verdict on the current rubric
        key = stratum_key(axis, view["met"])
        cells[key].append(
            AuditItem(
                grade_id=grade_id,
                answer_id=view["answer_id"],
                case_id=view["case_id"],
                criterion_id=view["criterion_id"],
                model=model,
                stratum=key,
            )
        )
    return dict(cells)


def _models(store: Store, answer_ids: list[str]) -> Iterator[tuple[str, str]]:
    for answer_id, view in store.fields_many(Answer.kind, answer_ids, _ANSWER):
        yield answer_id, view["model"]


def _axes(store: Store, case_ids: list[str]) -> Iterator[tuple[tuple[str, str], str]]:
    """(case, criterion id) → axis over the writer's rubrics and their reviewed versions."""
    ids = [f"rubric:{case_id}" for case_id in case_ids]
    for rubric_id, view in store.fields_many(Rubric.kind, ids, _RUBRIC):
        case_id = rubric_id.removeprefix("rubric:")
        for c in view["criteria"]:
            if c["axis"] in AXES:
                yield (case_id, criterion_key_id(c["text"], c["axis"], c["weight"])), c["axis"]
    for case_id, version in latest_versions(store, case_ids).items():
        for criterion in version.criteria:
            yield (case_id, criterion.id), criterion.axis
