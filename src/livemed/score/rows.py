"""What a scoring run keeps of each score: a `ScoreRow`, a few hundred bytes where the `Score` record
it stands for takes ~3 KB in memory (pydantic's fields, its provenance, three dicts of floats).

`score.stage.score_all` writes whole Score records to the store, as ever, and keeps a ScoreRow of each
for the commands that print or rank them, so a run over a million answers holds rows, not records.
A row reads like its record (`answer_id` … `published`, `judge`, `convention`, `failure_policy`,
`rubric_version`, `id`, `per_axis`, `per_theme`, `per_tag`): its per-axis, per-theme and per-tag
values are one array of floats, their names and the run's judge, convention, policy and rubric
version a `ScoreShape` that every row of that shape shares (a store's scores have few shapes).
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import NamedTuple

from livemed.records import Score
from livemed.records.grading import REVIEWED_SUFFIX, RubricChoice
from livemed.score.formula import Convention, FailurePolicy


def score_id(
    answer_id: str, judge: str, convention: str, policy: str, rubric_version: RubricChoice = "writer"
) -> str:
    """`Score.id` of an answer's score (the default policy's id has no suffix, nor the writer rubric's)."""
    suffix = "" if policy == "strict" else f":{policy}"
    reviewed = REVIEWED_SUFFIX if rubric_version == "latest-approved" else ""
    return f"score:{answer_id}:{judge}:{convention}{suffix}{reviewed}"


@dataclass(frozen=True, slots=True)
class ScoreShape:
    """What rows share: how they were scored, and the names of their per-axis, per-theme and per-tag
    values (in the order of the record's dicts)."""

    judge: str
    convention: Convention
    failure_policy: FailurePolicy
    rubric_version: RubricChoice
    axes: tuple[str, ...]
    themes: tuple[str, ...]
    tags: tuple[str, ...]


class ScoreRow(NamedTuple):
    """One score as a scoring run keeps it (see the module's text): its record's fields, read alike."""

    answer_id: str
    case_id: str
    model: str
    score: float
    coverage: float
    harm: float
    failures: int
    published: datetime | None
    shape: ScoreShape
    values: array[float]  # the per-axis, then the per-theme, then the per-tag values, as `shape` names them

    @property
    def judge(self) -> str:
        return self.shape.judge

    @property
    def convention(self) -> Convention:
        return self.shape.convention

    @property
    def failure_policy(self) -> FailurePolicy:
        return self.shape.failure_policy

    @property
    def rubric_version(self) -> RubricChoice:
        return self.shape.rubric_version

    @property
    def id(self) -> str:
        """Its record's `Score.id`."""
        shape = self.shape
        return score_id(
            self.answer_id, shape.judge, shape.convention, shape.failure_policy, shape.rubric_version
        )

    @property
    def per_axis(self) -> dict[str, float]:
        axes = self.shape.axes
        return dict(zip(axes, self.values[: len(axes)], strict=True))

    @property
    def per_theme(self) -> dict[str, float]:
        start = len(self.shape.axes)
        themes = self.shape.themes
        return dict(zip(themes, self.values[start : start + len(themes)], strict=True))

    @property
    def per_tag(self) -> dict[str, float]:
        start = len(self.shape.axes) + len(self.shape.themes)
        return dict(zip(self.shape.tags, self.values[start:], strict=True))


class RowMaker:
    """Makes the rows of one run: each shape and date is kept once, model names and case ids are
    interned, so that rows of the same shape, model, case or day share them."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[str | tuple[str, ...], ...], ScoreShape] = {}
        self._dates: dict[tuple[datetime, tzinfo | None], datetime] = {}  # an instant in one zone

    def row(self, score: Score) -> ScoreRow:
        per_axis, per_theme, per_tag = score.per_axis, score.per_theme, score.per_tag
        how = (score.judge, score.convention, score.failure_policy, score.rubric_version)
        names = (tuple(per_axis), tuple(per_theme), tuple(per_tag))
        shape = self._shapes.get(key := (*how, *names))
        if shape is None:
            shape = self._shapes[key] = ScoreShape(*how, *names)
        published = score.published
        if published is not None:
            published = self._dates.setdefault((published, published.tzinfo), published)
        return ScoreRow(
            answer_id=score.answer_id,
            case_id=sys.intern(score.case_id),
            model=sys.intern(score.model),
            score=score.score,
            coverage=score.coverage,
            harm=score.harm,
            failures=score.failures,
            published=published,
            shape=shape,
            values=array("d", [*per_axis.values(), *per_theme.values(), *per_tag.values()]),
        )
