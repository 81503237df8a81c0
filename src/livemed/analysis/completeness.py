"""How completely each model is graded: answers with a score out of the answers that could have one.

An answer is counted when its case has a rubric with positive weight (one without can never be
scored); it is graded when it has a Score from the analysed judge, convention and policy. An answer
with a grader call that failed, or (under the default policy) an unusable verdict, has no Score
(`scores` leaves it "not yet graded"), so a dead or unusable judge shows as 0 of N graded, never as a
score of 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NotRequired

from pydantic import BaseModel, TypeAdapter
from typing_extensions import TypedDict

from livemed.analysis.inputs import Scored
from livemed.store import Store


class Grading(BaseModel):
    """One model's grading completeness (a table of its own: `grading.csv|json`)."""

    model: str
    answers: int
    graded: int

    @property
    def complete(self) -> bool:
        return self.graded >= self.answers

    def label(self) -> str:
        return f"{self.graded}/{self.answers}" + ("" if self.complete else " incomplete")


class _Weight(TypedDict):
    weight: int
    points: NotRequired[float | None]


class _RubricWeights(TypedDict):
    case_id: str
    criteria: list[_Weight]


class AnswerOf(TypedDict):
    """The fields of a stored Answer that counting answers per model reads (not its text)."""

    model: str
    case_id: str


_RUBRIC_WEIGHTS, ANSWER_OF = TypeAdapter(_RubricWeights), TypeAdapter(AnswerOf)


def scorable_cases(store: Store) -> set[str]:
    """The cases whose rubric has a criterion of positive value (`Criterion.value`: the imported
    points, else the weight); only those fields of each Rubric are read."""
    out = set()
    for _, rubric in store.fields("rubric", _RUBRIC_WEIGHTS):
        if any(_value(c) > 0 for c in rubric["criteria"]):
            out.add(rubric["case_id"])
    return out


def _value(criterion: _Weight) -> float:
    points = criterion.get("points")
    return float(criterion["weight"]) if points is None else points


def grading_by_model(store: Store, scores: Sequence[Scored]) -> dict[str, Grading]:
    """Per model: scored answers out of the answers whose case has a scorable rubric."""
    scorable = scorable_cases(store)
    answers = Counter(a["model"] for _, a in store.fields("answer", ANSWER_OF) if a["case_id"] in scorable)
    return count(answers, scores)


def count(answers: Mapping[str, int], scores: Iterable[Scored]) -> dict[str, Grading]:
    graded: dict[str, set[str]] = {}
    for score in scores:
        graded.setdefault(score.model, set()).add(score.answer_id)
    models = sorted(set(answers) | set(graded))
    return {
        m: Grading(
            model=m, answers=max(answers.get(m, 0), len(graded.get(m, ()))), graded=len(graded.get(m, ()))
        )
        for m in models
    }


def incomplete(grading: Mapping[str, Grading]) -> list[Grading]:
    return [g for g in grading.values() if not g.complete]


def not_ranked_line(left_out: Sequence[Grading], judge: str | None, *, unusable: bool = False) -> str:
    """The one line a ranking command fails with when it left incompletely graded models out
    (`unusable`: some verdicts were unusable, which only `grade --retry-failures` grades again)."""
    who = ", ".join(f"{g.model} ({g.graded} of {g.answers} answers graded)" for g in left_out)
    j = judge or "J"
    again = " --retry-failures" if unusable else ""
    return (
        f"not ranked, grading incomplete: {who}; run `livemed grade --judge {j}{again}` and `livemed scores "
        f"--judge {j}` again, or pass --allow-incomplete to rank them as they are"
    )
