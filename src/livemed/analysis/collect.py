"""Read what the analyses need from the store (the analyses themselves never touch it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from livemed.analysis.inputs import CaseScore, case_scores, judges, select
from livemed.errors import UnknownNameError, UserError
from livemed.records import Case, Score
from livemed.store import Store


@dataclass
class ScoreSet:
    """The scores of one judge under one convention, and one row per (model, case)."""

    scores: list[Score]
    judge: str | None
    convention: str
    rows: list[CaseScore]


def pick_judge(all_scores: list[Score], judge: str | None, convention: str) -> str | None:
    """The judge to analyse: the one asked for, or the only one there is."""
    known = judges(all_scores, convention)
    if judge is not None:
        if judge not in known:
            raise UnknownNameError(f"judge (with {convention} scores)", judge, known)
        return judge
    if len(known) > 1:
        raise UserError(f"scores from several judges ({', '.join(known)}): choose one with --judge")
    return known[0] if known else None


def case_dates(store: Store) -> dict[str, datetime]:
    return {case.id: case.published for case in store.iter(Case)}


def mtime_dated(store: Store, case_ids: set[str]) -> int:
    """How many of these cases are dated by their input file's modification time (no real date)."""
    return sum(1 for case in store.iter(Case) if case.id in case_ids and case.date_field == "file_mtime")


def load_scores(store: Store, *, judge: str | None = None, convention: str = "livemed") -> ScoreSet:
    """One judge's scores, averaged per (model, case), dated by their cases."""
    all_scores = list(store.iter(Score))
    chosen = pick_judge(all_scores, judge, convention)
    scores = select(all_scores, judge=chosen, convention=convention)
    if not scores:
        raise UserError(
            f"no {convention} scores in the store {store.location}: run the grading stage first "
            "(`livemed grade`), or import scores with `livemed import`"
        )
    return ScoreSet(scores, chosen, convention, case_scores(scores, case_dates(store)))
