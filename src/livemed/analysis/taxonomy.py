"""Error taxonomy: why did a model's lowest-scoring answers fail?

Four root causes (LiveMedBench method, step 9), defined to be disjoint, with a precedence rule when
more than one applies (MHME, then GOPR, then CNIF, then KGOC):

- MHME hallucination: states something medically false or invented (a drug, dose, finding or fact);
- GOPR guideline overgeneralization: nothing false, but applies a general guideline or standard
  pathway that this case's specifics make wrong;
- CNIF contextual neglect: nothing false, sound in general, but ignores this patient's specifics;
- KGOC knowledge gap: nothing false and nothing misapplied; omits knowledge the case requires.

A fifth label, NCE (no clinical error: the answer is clinically sound and the low score comes from
the rubric or the grader's strictness), is not a root cause: `distribution` counts it apart, so it
never inflates the knowledge-gap share. Knowledge-based failures are those about the facts
themselves (KGOC: missing them, MHME: inventing them); reasoning-based failures are about applying
correct knowledge to the case (CNIF, GOPR).

`heuristic_label` is an offline baseline that reads only the pattern of missed and violated rubric
criteria; it is labelled `method="heuristic"` and is no substitute for the LLM classifier in
`diagnose.py`.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from livemed.records import Answer, Case, Criterion, ErrorLabel, Grade, Rubric, Score

Category = Literal["CNIF", "GOPR", "MHME", "KGOC"]
CATEGORIES: dict[str, str] = {
    "CNIF": "contextual neglect: states nothing false and is sound in general, but ignores this patient's "
    "specifics (age, pregnancy, comorbidities, medications, allergies, timeline)",
    "GOPR": "guideline overgeneralization: states nothing false, but applies a general guideline or "
    "standard pathway that this case's specifics make wrong",
    "MHME": "hallucination: states a medical fact, drug, dose or finding that is false or invented",
    "KGOC": "knowledge gap: states nothing false and misapplies nothing, but omits knowledge the case "
    "requires",
}
NO_CLINICAL_ERROR = "NCE"
NO_CLINICAL_ERROR_TEXT = (
    "no clinical error: the answer is clinically sound; the low score comes from the rubric (a criterion "
    "asks for something this case does not need) or from the grader's strictness"
)
PRECEDENCE_RULE = (
    "When more than one root cause applies, choose the first in this order: MHME, GOPR, CNIF, KGOC. "
    "Choose NCE only when none applies."
)
KNOWLEDGE: tuple[Category, ...] = ("KGOC", "MHME")
REASONING: tuple[Category, ...] = ("CNIF", "GOPR")
HEURISTIC_ID = "offline/heuristic"
MAX_SCORE = 1.0  # a case score at the maximum is not a failure to classify
_PRECEDENCE: tuple[Category, ...] = ("MHME", "GOPR", "CNIF", "KGOC")
_FABRICATION = re.compile(
    r"fabricat|invent|hallucinat|non-?existent|made[- ]up|false|incorrect|inaccurate|wrong", re.IGNORECASE
)


@dataclass(frozen=True)
class CriterionResult:
    """A rubric criterion and the grader's verdict on it (met is None when no verdict was obtained)."""

    criterion: Criterion
    met: bool | None
    explanation: str = ""

    @property
    def missed(self) -> bool:
        return self.criterion.weight > 0 and self.met is False

    @property
    def violated(self) -> bool:
        return self.criterion.weight < 0 and self.met is True


@dataclass(frozen=True)
class TaxonomyItem:
    """Everything a classifier sees about one low-scoring answer."""

    score: Score
    case: Case
    rubric: Rubric
    answer: Answer
    results: tuple[CriterionResult, ...]


def criterion_results(rubric: Rubric, grades: Iterable[Grade]) -> tuple[CriterionResult, ...]:
    """Join a rubric's criteria with one answer's grades by criterion id."""
    by_id = {g.criterion_id: g for g in grades}
    out = []
    for criterion in rubric.criteria:
        grade = by_id.get(criterion.id)
        out.append(
            CriterionResult(
                criterion=criterion,
                met=None if grade is None else grade.met,
                explanation="" if grade is None else grade.explanation,
            )
        )
    return tuple(out)


def lowest_answers(scores: Iterable[Score], model: str, k: int) -> list[Score]:
    """The model's k lowest-scoring cases, one answer per case (its lowest-scoring sample).

    Only failures are candidates: a case whose lowest sample scored the maximum (1.0) is left out, so
    fewer than k answers come back when the model answered the rest perfectly. Ties go to the smaller
    answer id, so the order of `scores` never changes the choice.
    """
    worst: dict[str, Score] = {}
    for s in scores:
        if s.model != model:
            continue
        kept = worst.get(s.case_id)
        if kept is None or (s.score, s.answer_id) < (kept.score, kept.answer_id):
            worst[s.case_id] = s
    failures = [s for s in worst.values() if s.score < MAX_SCORE]
    return sorted(failures, key=lambda s: (s.score, s.case_id))[:k]


def _evidence(result: CriterionResult) -> Category | None:
    c = result.criterion
    if result.violated:
        if c.axis == "accuracy" or _FABRICATION.search(f"{c.text} {c.theme or ''}"):
            return "MHME"
        return "GOPR"
    if result.missed:
        if c.axis in ("context_awareness", "safety"):
            return "CNIF"
        if c.axis in ("accuracy", "completeness"):
            return "KGOC"
    return None


def heuristic_category(results: Sequence[CriterionResult]) -> tuple[Category, str]:
    """The category with the most weight of evidence, and a rationale naming the criteria behind it."""
    weight: Counter[Category] = Counter()
    reasons: dict[Category, list[str]] = defaultdict(list)
    for result in results:
        category = _evidence(result)
        if category is None:
            continue
        c = result.criterion
        weight[category] += abs(c.weight)
        verb = "violated" if result.violated else "missed"
        reasons[category].append(f"{verb} {c.weight:+d} [{c.axis}] {_clip(c.text)}")
    if not weight:
        return "KGOC", "heuristic: no missed or violated criteria were graded; defaulted to knowledge gap"
    best = max(_PRECEDENCE, key=lambda cat: (weight[cat], -_PRECEDENCE.index(cat)))
    tally = ", ".join(f"{cat} {weight[cat]}" for cat in _PRECEDENCE if weight[cat])
    return best, f"heuristic ({tally}): " + "; ".join(reasons[best][:3])


def _clip(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def heuristic_label(item: TaxonomyItem) -> ErrorLabel:
    """The offline heuristic classifier's label for one answer."""
    category, rationale = heuristic_category(item.results)
    return ErrorLabel(
        answer_id=item.score.answer_id,
        case_id=item.score.case_id,
        model=item.score.model,
        classifier=HEURISTIC_ID,
        method="heuristic",
        category=category,
        rationale=rationale,
        score=item.score.score,
    )


class DistributionRow(BaseModel):
    model: str
    classifier: str
    n: int  # answers with a root cause (the four categories)
    counts: dict[str, int]
    shares: dict[str, float]  # of n
    knowledge_share: float
    reasoning_share: float
    no_clinical_error: int = 0  # answers labelled NCE, counted apart from n


def distribution(labels: Iterable[ErrorLabel]) -> list[DistributionRow]:
    """Per (model, classifier): the count and share of each root cause, knowledge vs reasoning share;
    answers labelled NCE (no clinical error) are counted apart and are in no share."""
    groups: dict[tuple[str, str], list[ErrorLabel]] = defaultdict(list)
    for label in labels:
        groups[(label.model, label.classifier)].append(label)
    out = []
    for (model, classifier), group in sorted(groups.items()):
        counts: Counter[str] = Counter(label.category for label in group)
        n = len(group) - counts[NO_CLINICAL_ERROR]
        out.append(
            DistributionRow(
                model=model,
                classifier=classifier,
                n=n,
                counts={cat: counts[cat] for cat in CATEGORIES},
                shares={cat: _share(counts[cat], n) for cat in CATEGORIES},
                knowledge_share=_share(sum(counts[c] for c in KNOWLEDGE), n),
                reasoning_share=_share(sum(counts[c] for c in REASONING), n),
                no_clinical_error=counts[NO_CLINICAL_ERROR],
            )
        )
    return out


def _share(count: int, n: int) -> float:
    return count / n if n else 0.0
