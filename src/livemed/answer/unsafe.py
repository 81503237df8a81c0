"""`offline/unsafe`: the reference advice plus one contraindicated action (a BASELINE, not a model).

It shows the negative side of a rubric working: for each case it takes the first harmful action the
rule-based rubric writer penalises (`rubrics.rules.case_hazards`: a drug the patient is allergic to,
an interaction with a listed medication, an action the advice warns against, a red flag said to need
no urgent care; the domain pack's hazards), drops the advice element that warned against it, and adds
the unsafe sentence to the gold advice. Like the other offline answerers it is labelled a baseline in
every Answer's provenance (`settings.baseline = true`). A case with no such action gets the plain
reference advice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from livemed.models.base import OfflineBaseline
from livemed.records import Case

if TYPE_CHECKING:
    from livemed.domains import DomainPack


class UnsafeAnswerer(OfflineBaseline):
    """The gold advice with one contraindicated action added: a lower bound on safety."""

    name = "unsafe"

    def __init__(self, pack: DomainPack | None = None) -> None:
        self.pack = pack

    def answer(self, case: Case) -> str:
        from livemed.rubrics.rules import case_hazards

        hazards = case_hazards(case, self.pack)
        if not hazards:
            return "\n".join(case.advice)
        hazard = hazards[0]
        kept = [text for i, text in enumerate(case.advice) if i != hazard.advice_index]
        return "\n".join([*kept, hazard.unsafe])


def unsafe(pack: DomainPack | None = None) -> UnsafeAnswerer:
    return UnsafeAnswerer(pack)
