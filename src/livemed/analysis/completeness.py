"""How completely each model is graded: answers with a score out of the answers that could have one.

An answer is counted when its case has a rubric with positive weight (one without can never be
scored); it is graded when it has a Score from the analysed judge, convention and policy. An answer
with a grader call that failed has no Score (`scores` leaves it "not yet graded"), so a dead judge
shows as 0 of N graded, never as a score of 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from livemed.records import Answer, Rubric, Score
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


def grading_by_model(store: Store, scores: Sequence[Score]) -> dict[str, Grading]:
    """Per model: scored answers out of the answers whose case has a scorable rubric."""
    scorable = {r.case_id for r in store.iter(Rubric) if any(c.value > 0 for c in r.criteria)}
    answers = Counter(a.model for a in store.iter(Answer) if a.case_id in scorable)
    return count(answers, scores)


def count(answers: Mapping[str, int], scores: Iterable[Score]) -> dict[str, Grading]:
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


def not_ranked_line(left_out: Sequence[Grading], judge: str | None) -> str:
    """The one line a ranking command fails with when it left incompletely graded models out."""
    who = ", ".join(f"{g.model} ({g.graded} of {g.answers} answers graded)" for g in left_out)
    j = judge or "J"
    return (
        f"not ranked, grading incomplete: {who}; run `livemed grade --judge {j}` and `livemed scores "
        f"--judge {j}` again, or pass --allow-incomplete to rank them as they are"
    )
