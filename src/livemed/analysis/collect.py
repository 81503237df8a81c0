"""Read what the analyses need from the store (the analyses themselves never touch it)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NotRequired

from pydantic import AwareDatetime, TypeAdapter
from typing_extensions import TypedDict

from livemed.analysis.completeness import Grading, grading_by_model, incomplete
from livemed.analysis.inputs import CaseScore, ScoreColumns, ScoreRef, judges
from livemed.errors import UnknownNameError, UserError
from livemed.records import Score
from livemed.score.formula import CONVENTIONS, POLICIES
from livemed.store import Store


@dataclass
class ScoreSet:
    """The scores of one judge under one convention and failure policy, and one row per (model, case)."""

    scores: Sequence[ScoreRef]
    judge: str | None
    convention: str
    rows: list[CaseScore]
    policy: str = "strict"
    grading: dict[str, Grading] = field(default_factory=dict)

    def context(self) -> dict[str, str | None]:
        """What every analysis table states: the scores it was computed from."""
        return {"convention": self.convention, "judge": self.judge, "failure_policy": self.policy}

    def ranked(self, allow_incomplete: bool) -> tuple[list[CaseScore], list[Grading]]:
        """The rows to rank, and the incompletely graded models left out (none with `allow_incomplete`)."""
        left_out = [] if allow_incomplete else incomplete(self.grading)
        names = {g.model for g in left_out}
        return [r for r in self.rows if r.model not in names], left_out


def check_choice(convention: str, policy: str = "strict") -> None:
    """A one-line UserError for an unknown convention or failure policy, naming the allowed values."""
    if convention not in CONVENTIONS:
        raise UserError(f"unknown --convention {convention!r}: use one of {', '.join(CONVENTIONS)}")
    if policy not in POLICIES:
        raise UserError(f"unknown --policy {policy!r}: use one of {', '.join(POLICIES)}")


def pick_judge(
    all_scores: Iterable[Score], judge: str | None, convention: str, policy: str = "strict"
) -> str | None:
    """The judge to analyse: the one asked for, or the only one there is."""
    check_choice(convention, policy)
    return _choose(judges(all_scores, convention, policy), judge, convention, policy)


def _known(choices: set[tuple[str, str, str]], convention: str, policy: str) -> list[str]:
    return sorted({j for j, c, p in choices if c == convention and p == policy})


def _choose(known: list[str], judge: str | None, convention: str, policy: str) -> str | None:
    if judge is not None:
        if judge not in known:
            raise UnknownNameError(f"judge (with {convention} scores, policy {policy})", judge, known)
        return judge
    if len(known) > 1:
        raise UserError(f"scores from several judges ({', '.join(known)}): choose one with --judge")
    return known[0] if known else None


class _Published(TypedDict):
    published: AwareDatetime


class _CaseDate(_Published):
    date_field: NotRequired[str]


class _Choice(TypedDict):
    """The fields of a stored Score that choosing the judge, convention and policy reads."""

    judge: str
    convention: NotRequired[str]
    failure_policy: NotRequired[str]
    rubric_version: NotRequired[str]


class _ScoreFields(_Choice):
    """The fields of a stored Score the analyses read (not its per-theme or per-tag tables)."""

    answer_id: str
    case_id: str
    model: str
    score: float
    per_axis: NotRequired[dict[str, float]]
    coverage: float
    harm: float
    failures: NotRequired[int]
    published: NotRequired[AwareDatetime | None]


_PUBLISHED, _CASE_DATE = TypeAdapter(_Published), TypeAdapter(_CaseDate)
_CHOICE, _SCORE_FIELDS = TypeAdapter(_Choice), TypeAdapter(_ScoreFields)


def case_dates(store: Store) -> dict[str, datetime]:
    """Each case's publication date (only that field of each Case is read)."""
    return {case_id: view["published"] for case_id, view in store.fields("case", _PUBLISHED)}


def mtime_dated(store: Store, case_ids: set[str]) -> int:
    """How many of these cases are dated by their input file's modification time (no real date)."""
    return sum(
        1
        for case_id, view in store.fields("case", _CASE_DATE)
        if case_id in case_ids and view.get("date_field") == "file_mtime"
    )


REVIEWED_OPTION = " --rubric-version latest-approved"


def _choice(view: _Choice) -> tuple[str, str, str]:
    return view["judge"], view.get("convention", "livemed"), view.get("failure_policy", "strict")


def _choices(store: Store, rubric_version: str) -> set[tuple[str, str, str]]:
    """(judge, convention, policy) of every stored score on the rubrics `rubric_version` names."""
    return {
        _choice(view)
        for _, view in store.fields("score", _CHOICE)
        if view.get("rubric_version", "writer") == rubric_version
    }


def load_scores(
    store: Store,
    *,
    judge: str | None = None,
    convention: str = "livemed",
    policy: str = "strict",
    rubric_version: str = "writer",
) -> ScoreSet:
    """One judge's scores under one convention and one failure policy (never a mix), averaged per
    (model, case), dated by their cases. `rubric_version`: scores on the writer's rubrics (default),
    or on the reviewed ones (`scores --rubric-version latest-approved` writes them), never both.

    Reads the store twice, each time only the fields it needs (never whole Score records): the
    (judge, convention, policy) of every score to choose the judge (not when `judge` is given and
    has scores: then once), then the chosen scores' fields,
    kept as columns (`ScoreColumns`: typed arrays, a few hundred bytes a score), from which the
    (model, case) rows are built; the scores read back as `ScoreRef` tuples."""
    check_choice(convention, policy)
    choices: set[tuple[str, str, str]] = set()
    if judge is None:  # a judge named by the caller needs no first pass, unless it has no scores
        choices = _choices(store, rubric_version)
    chosen = (
        judge if judge is not None else _choose(_known(choices, convention, policy), None, convention, policy)
    )
    columns = ScoreColumns()
    if chosen is not None:
        for _, view in store.fields("score", _SCORE_FIELDS):
            if _choice(view) != (chosen, convention, policy):
                continue
            if view.get("rubric_version", "writer") != rubric_version:
                continue
            columns.add(
                model=sys.intern(view["model"]),
                case_id=sys.intern(view["case_id"]),
                answer_id=view["answer_id"],
                judge=chosen,
                score=view["score"],
                coverage=view["coverage"],
                harm=view["harm"],
                failures=view.get("failures", 0),
                per_axis=view.get("per_axis", {}),
                published=view.get("published"),
            )
    if not columns and judge is not None:  # the first pass, for the error naming the judges there are
        choices = _choices(store, rubric_version)
        _choose(_known(choices, convention, policy), judge, convention, policy)
    if not columns:
        others = sorted({p for _, c, p in choices if c == convention} - {policy})
        hint = f" (there are {convention} scores under --policy {', '.join(others)})" if others else ""
        j = judge or "offline/lexical"
        on, option = ("", "") if rubric_version == "writer" else (" on the reviewed rubrics", REVIEWED_OPTION)
        raise UserError(
            f"no {convention} scores{on} with failure policy {policy} in the store {store.location}{hint}: "
            f"grade answers (e.g. `livemed grade --judge {j}{option}`), then score them "
            f"(`livemed scores --judge {j} --convention {convention} --policy {policy}{option}`)"
        )
    rows = columns.rows(case_dates(store))
    return ScoreSet(columns, chosen, convention, rows, policy, grading_by_model(store, columns))
