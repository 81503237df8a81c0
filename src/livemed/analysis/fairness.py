"""Is every case fair to the candidate? The case audit behind `livemed cases audit`.

Four figures over the store's cases and their rubrics, each against its target:

- **context seen**: criteria whose context (the patient facts they name or presuppose: "given their
  family history", "cutting back on caffeine") is in the candidate's view (`curate.view`). Target
  100 %: a criterion resting on a fact the candidate never saw lowers a score for a reason that is not
  the model's (`rubrics.coverage`).
- **leaks**: cases whose candidate view already states the answer, by the leak audit at
  `[thresholds] answer_leak` (`curate.leak.leak_findings`). Target 0.
- **decisive values required**: positive criteria whose source fact holds a decisive value (a dose,
  interval, threshold or legal period) and that require it rather than give it after "such as"
  (`rubrics.decisive.decisive_share`). Reported as a share; the writers aim at all of them.
- **omission negatives**: negative criteria that restate a positive's omission ("Does not warn …"),
  which would punish one omission twice (`rubrics.check.omission_negatives`). Target 0.

The audit reads records only (no model call); a case without a rubric counts for leaks only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field, computed_field

from livemed.curate.leak import leak_findings
from livemed.domains import DomainPack
from livemed.records import Case, Rubric
from livemed.rubrics.check import omission_negatives
from livemed.rubrics.coverage import coverage
from livemed.rubrics.decisive import decisive_share
from livemed.store import Store


class CaseAudit(BaseModel):
    """One case's part of the audit (a row of `case-audit.csv/json`)."""

    case_id: str
    has_rubric: bool
    criteria: int = 0
    unseen_criteria: int = 0
    unseen: list[str] = Field(default_factory=list)  # "#i: the unseen fact"
    leaks: list[str] = Field(default_factory=list)  # each leak described in one line
    decisive_required: int = 0
    decisive_total: int = 0
    negatives: int = 0
    omissions: list[str] = Field(default_factory=list)  # the negatives' texts

    @property
    def fair(self) -> bool:
        return not (self.unseen or self.leaks or self.omissions)


def audit_case(case: Case, rubric: Rubric | None, pack: DomainPack, *, max_leak: float) -> CaseAudit:
    leaks = [finding.describe() for finding in leak_findings(case, pack, max_leak=max_leak)]
    if rubric is None:
        return CaseAudit(case_id=case.id, has_rubric=False, leaks=leaks)
    required, total = decisive_share(rubric.criteria, pack)
    unseen = coverage(case, rubric, pack).unseen
    return CaseAudit(
        case_id=case.id,
        has_rubric=True,
        criteria=len(rubric.criteria),
        unseen_criteria=len({index for index, _ in unseen}),
        unseen=[f"#{index}: {fact}" for index, fact in unseen],
        leaks=leaks,
        decisive_required=required,
        decisive_total=total,
        negatives=sum(1 for c in rubric.criteria if c.polarity == "negative"),
        omissions=omission_negatives(rubric.criteria, pack),
    )


class Figure(BaseModel):
    """One line of the audit: `count` of `n` (in `unit`), its target, and whether it is met (None: a
    figure reported with no target)."""

    check: str
    count: int
    n: int
    unit: str
    target: str
    met: bool | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def share(self) -> float | None:
        return self.count / self.n if self.n else None


class Summary(BaseModel):
    """The audit's figures, as the JSON table's summary."""

    cases: int
    rubrics: int
    figures: list[Figure]
    targets_missed: int


@dataclass(frozen=True)
class FairnessAudit:
    cases: list[CaseAudit]

    @property
    def rubrics(self) -> list[CaseAudit]:
        return [c for c in self.cases if c.has_rubric]

    def figures(self) -> list[Figure]:
        rubrics = self.rubrics
        criteria = sum(c.criteria for c in rubrics)
        seen = criteria - sum(c.unseen_criteria for c in rubrics)
        leaking = sum(1 for c in self.cases if c.leaks)
        required = sum(c.decisive_required for c in rubrics)
        decisive = sum(c.decisive_total for c in rubrics)
        omissions = sum(len(c.omissions) for c in rubrics)
        negatives = sum(c.negatives for c in rubrics)
        return [
            Figure(
                check=CONTEXT, count=seen, n=criteria, unit="criteria", target="100 %", met=seen == criteria
            ),
            Figure(check=LEAK, count=leaking, n=len(self.cases), unit="cases", target="0", met=leaking == 0),
            Figure(check=DECISIVE, count=required, n=decisive, unit="criteria", target="reported", met=None),
            Figure(
                check=OMISSION, count=omissions, n=negatives, unit="negatives", target="0", met=omissions == 0
            ),
        ]

    def missed(self) -> list[Figure]:
        return [f for f in self.figures() if f.met is False]

    def unfair(self) -> list[CaseAudit]:
        return [c for c in self.cases if not c.fair]

    def summary(self) -> Summary:
        figures = self.figures()
        missed = sum(1 for f in figures if f.met is False)
        return Summary(
            cases=len(self.cases), rubrics=len(self.rubrics), figures=figures, targets_missed=missed
        )


CONTEXT = "criteria whose context the candidate sees"
LEAK = "cases whose view gives the answer away"
DECISIVE = "decisive values the positive criterion requires"
OMISSION = "negatives restating a positive's omission"


def audit_cases(
    pairs: Iterable[tuple[Case, Rubric | None]], pack: DomainPack, *, max_leak: float
) -> FairnessAudit:
    return FairnessAudit([audit_case(case, rubric, pack, max_leak=max_leak) for case, rubric in pairs])


def stored_pairs(store: Store, batch: int = 500) -> Iterator[tuple[Case, Rubric | None]]:
    """Every stored case with its rubric (None when it has none yet), in pages of `batch` cases."""
    page: list[Case] = []
    for case in store.iter(Case):
        page.append(case)
        if len(page) == batch:
            yield from _with_rubrics(store, page)
            page = []
    yield from _with_rubrics(store, page)


def _with_rubrics(store: Store, cases: Sequence[Case]) -> Iterator[tuple[Case, Rubric | None]]:
    rubrics = store.get_many(Rubric, [f"rubric:{case.id}" for case in cases])
    for case in cases:
        yield case, rubrics.get(f"rubric:{case.id}")
