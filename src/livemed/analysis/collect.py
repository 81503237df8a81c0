"""Read what the analyses need from the store (the analyses themselves never touch it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from livemed.analysis.completeness import Grading, grading_by_model, incomplete
from livemed.analysis.inputs import CaseScore, case_scores, judges, select
from livemed.errors import UnknownNameError, UserError
from livemed.grading.score import CONVENTIONS, POLICIES
from livemed.records import Case, Score
from livemed.store import Store


@dataclass
class ScoreSet:
    """The scores of one judge under one convention and failure policy, and one row per (model, case)."""

    scores: list[Score]
    judge: str | None
    convention: str
    rows: list[CaseScore]
    policy: str = "not-met"
    grading: dict[str, Grading] = field(default_factory=dict)

    def context(self) -> dict[str, str | None]:
        """What every analysis table states: the scores it was computed from."""
        return {"convention": self.convention, "judge": self.judge, "failure_policy": self.policy}

    def ranked(self, allow_incomplete: bool) -> tuple[list[CaseScore], list[Grading]]:
        """The rows to rank, and the incompletely graded models left out (none with `allow_incomplete`)."""
        left_out = [] if allow_incomplete else incomplete(self.grading)
        names = {g.model for g in left_out}
        return [r for r in self.rows if r.model not in names], left_out


def check_choice(convention: str, policy: str = "not-met") -> None:
    """A one-line UserError for an unknown convention or failure policy, naming the allowed values."""
    if convention not in CONVENTIONS:
        raise UserError(f"unknown --convention {convention!r}: use one of {', '.join(CONVENTIONS)}")
    if policy not in POLICIES:
        raise UserError(f"unknown --policy {policy!r}: use one of {', '.join(POLICIES)}")


def pick_judge(
    all_scores: list[Score], judge: str | None, convention: str, policy: str = "not-met"
) -> str | None:
    """The judge to analyse: the one asked for, or the only one there is."""
    check_choice(convention, policy)
    known = judges(all_scores, convention, policy)
    if judge is not None:
        if judge not in known:
            raise UnknownNameError(f"judge (with {convention} scores, policy {policy})", judge, known)
        return judge
    if len(known) > 1:
        raise UserError(f"scores from several judges ({', '.join(known)}): choose one with --judge")
    return known[0] if known else None


def case_dates(store: Store) -> dict[str, datetime]:
    return {case.id: case.published for case in store.iter(Case)}


def mtime_dated(store: Store, case_ids: set[str]) -> int:
    """How many of these cases are dated by their input file's modification time (no real date)."""
    return sum(1 for case in store.iter(Case) if case.id in case_ids and case.date_field == "file_mtime")


def load_scores(
    store: Store, *, judge: str | None = None, convention: str = "livemed", policy: str = "not-met"
) -> ScoreSet:
    """One judge's scores under one convention and one failure policy (never a mix), averaged per
    (model, case), dated by their cases."""
    all_scores = list(store.iter(Score))
    chosen = pick_judge(all_scores, judge, convention, policy)
    scores = select(all_scores, judge=chosen, convention=convention, policy=policy)
    if not scores:
        others = sorted({s.failure_policy for s in all_scores if s.convention == convention} - {policy})
        hint = f" (there are {convention} scores under --policy {', '.join(others)})" if others else ""
        raise UserError(
            f"no {convention} scores with failure policy {policy} in the store {store.location}{hint}: "
            f"grade answers (`livemed grade --judge J`), then score them "
            f"(`livemed scores --judge J --convention {convention} --policy {policy}`)"
        )
    rows = case_scores(scores, case_dates(store))
    return ScoreSet(scores, chosen, convention, rows, policy, grading_by_model(store, scores))
