"""The Validator: scores a draft case and rejects weak ones.

- s_cc: is Q a clinically meaningful question (Ely's taxonomy of clinical questions in the prompt); the
  reply gives the query type first, and an s_cc that contradicts it is taken as False (`clinical`),
  with a finding;
- s_inf: the fraction of a checklist of narrative items that are present (configurable per case type):
  the checklist is shown numbered, and the reply's items are matched by normalised name, the
  narrative's own keys ("onset_duration"), or number (`present_items`); an item matching none is a
  finding on the case;
- s_align: each advice element is checked against retrieved evidence — 1.0 supported, 0.5 partially
  (defined in the prompt), 0.0 unsupported, contradicting evidence recorded apart (`contradicted`); the
  elements shown are numbered 0..m-1 whatever their positions; an element with no evidence retrieved
  scores 0.0 without asking the model; the mean.

A case is kept only when s_cc is true and s_inf and s_align are strictly above their thresholds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from livemed.common.prompts import DATA_RULES, data_block
from livemed.config import Thresholds
from livemed.curate.screener import reject
from livemed.domains import DomainPack, medical
from livemed.evidence import RetrievalError, Retriever, search_all
from livemed.models.base import Message, Settings
from livemed.models.llm import LLM
from livemed.models.structured import Reason
from livemed.records import AdviceCheck, Case, Doc, EvidenceRef, Rejection, Validation, short_hash

STAGE = "validator"
DEFAULT_CHECKLIST = (
    "age",
    "sex",
    "chief complaint",
    "onset/duration",
    "symptom characteristics",
    "relevant history",
    "medications",
    "allergies",
)

# The prompts are the domain pack's (`prompts/validator_query.txt` with Ely's taxonomy for medicine,
# `validator_align.txt` with the three support levels); so are the checklist and its aliases
# (`checklists`, `checklist_aliases`). The query types are the schema's, filled into the prompt.
QueryType = Literal[
    "diagnosis",
    "treatment",
    "management",
    "epidemiology",
    "prognosis",
    "etiology",
    "history_physical",
    "test_interpretation",
    "non_clinical",
]
QUERY_TYPES: tuple[str, ...] = get_args(QueryType)
# How each checklist item may come back besides its own name (the narrative's own keys): the medical
# pack's `checklist_aliases`.
ITEM_ALIASES: Mapping[str, tuple[str, ...]] = {
    item: tuple(names) for item, names in medical().checklist_aliases.items()
}


def item_aliases(pack: DomainPack) -> dict[str, list[str]]:
    """Other names of each checklist item: the pack's aliases and the narrative slot that answers it."""
    out = {item: list(names) for item, names in pack.checklist_aliases.items()}
    for item, slot in pack.checklist_fields.items():
        out.setdefault(item, []).append(slot)
    return out


def query_prompt(pack: DomainPack | None = None) -> str:
    types = ", ".join(QUERY_TYPES)
    return (pack or medical()).render("validator_query", data_rules=DATA_RULES, query_types=types)


def align_prompt(pack: DomainPack | None = None) -> str:
    return (pack or medical()).render("validator_align", data_rules=DATA_RULES)


QUERY_PROMPT = query_prompt()  # the medical pack's
ALIGN_PROMPT = align_prompt()


class ItemCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int | None = None
    item: str = ""
    present: bool


class QueryCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rationale: Reason  # first: what the query asks and what the narrative states, before the verdicts
    query_type: QueryType
    s_cc: bool
    items: list[ItemCheck] = Field(default_factory=list)


class AlignmentScore(BaseModel):
    model_config = ConfigDict(extra="forbid")

    advice_index: int = Field(ge=0)
    rationale: Reason  # before the score: what the evidence says about the element
    score: float = Field(json_schema_extra={"enum": [0.0, 0.5, 1.0]})
    contradicted: bool = False

    @field_validator("score")
    @classmethod
    def _three_levels(cls, score: float) -> float:
        if score not in (0.0, 0.5, 1.0):
            raise ValueError("score must be 0.0, 0.5 or 1.0")
        return score


class AlignmentOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: list[AlignmentScore] = Field(default_factory=list)


def _key(name: str) -> str:
    """A checklist name normalised: lower case, no numbering ("1. Age:"), `_` and spaces folded."""
    name = re.sub(r"^\s*(?:\d+[.):]?|[-*•])\s*", "", name.lower())
    return " ".join(name.replace("_", " ").strip(" :.").split())


def present_items(
    checklist: Sequence[str],
    items: Sequence[ItemCheck],
    aliases: Mapping[str, Sequence[str]] = ITEM_ALIASES,
) -> tuple[set[int], list[str]]:
    """The checklist indices the reply marks present, matched by index (when the reply's name does not
    point elsewhere) or by normalised name and alias; and one finding per reply item matching none."""
    names = {_key(item): n for n, item in enumerate(checklist)}
    for k, item in enumerate(checklist):
        names.update({_key(alias): k for alias in aliases.get(item.lower(), ())})
    present: set[int] = set()
    misses: list[str] = []
    for check in items:
        by_name = names.get(_key(check.item)) if check.item.strip() else None
        by_index = check.index if check.index is not None and 0 <= check.index < len(checklist) else None
        n: int | None = by_name if by_name is not None else by_index
        if n is None:
            misses.append(
                f"validator: checklist reply item {check.item!r} (index {check.index}) matched no item"
            )
        elif check.present:
            present.add(n)
    return present, misses


def query_messages(case: Case, checklist: Sequence[str], pack: DomainPack | None = None) -> list[Message]:
    slots = case.narrative.by_slot((pack or medical()).narrative_slots)
    narrative = json.dumps(slots, ensure_ascii=False, indent=1)
    user = (
        "Checklist: "
        + "; ".join(f"{n}. {item}" for n, item in enumerate(checklist))
        + "\n\n"
        + data_block("query", case.query, derived=str(case.query_derived).lower())
        + "\n\n"
        + data_block("narrative", narrative)
    )
    return [{"role": "system", "content": query_prompt(pack)}, {"role": "user", "content": user}]


def align_messages(
    advice: Mapping[int, str], evidence: Mapping[int, list[EvidenceRef]], pack: DomainPack | None = None
) -> list[Message]:
    """The elements shown numbered 0..m-1 in order, whatever their positions in the case's advice
    (numbers that skip would shift every score of a model that numbers from 0); `Validator.align`
    maps the numbers back."""
    blocks = []
    for shown, (index, text) in enumerate(advice.items()):
        blocks.append(data_block("advice", text, i=shown))
        blocks.extend(data_block("evidence", ref.snippet, i=shown, id=ref.id) for ref in evidence[index])
    user = "\n\n".join(blocks)
    return [{"role": "system", "content": align_prompt(pack)}, {"role": "user", "content": user}]


class Validator:
    """Scores s_cc, s_inf and s_align with a model and a retriever."""

    def __init__(
        self,
        llm: LLM,
        *,
        checklists: Mapping[str, Sequence[str]] | None = None,
        k: int = 3,
        pack: DomainPack | None = None,
    ) -> None:
        self.llm = llm
        self.checklists = dict(checklists or {})
        self.k = k
        self.pack = pack or medical()
        self.prompt = query_prompt(self.pack) + align_prompt(self.pack)

    def checklist(self, doc: Doc) -> Sequence[str]:
        """The configured checklist for the document type, else the pack's (medical: DEFAULT_CHECKLIST)."""
        configured = self.checklists.get(doc.doc_type) or self.checklists.get("default")
        return configured or self.pack.checklist(doc.doc_type) or DEFAULT_CHECKLIST

    async def validate(
        self, case: Case, doc: Doc, *, retriever: Retriever, thresholds: Thresholds
    ) -> Case | Rejection:
        checklist = self.checklist(doc)
        checked = await self.llm.structured(
            query_messages(case, checklist, self.pack), QueryCheck, Settings(temperature=0)
        )
        if checked.value is None:
            return reject(doc, "validator_failed", checked.failure or "no output", stage=STAGE)
        try:
            advice_checks = await self.align(case.advice, retriever)
        except RetrievalError as exc:  # retried on the next run, unlike "unsupported_advice"
            return reject(doc, "retrieval_failed", str(exc), stage=STAGE)
        if advice_checks is None:
            return reject(doc, "validator_failed", "the alignment call failed", stage=STAGE)
        present, findings = present_items(checklist, checked.value.items, item_aliases(self.pack))
        missing = [item for n, item in enumerate(checklist) if n not in present]
        s_cc, contradiction = clinical(checked.value)
        validation = Validation(
            s_cc=s_cc,
            s_inf=round((len(checklist) - len(missing)) / len(checklist), 4),
            s_align=round(sum(c.score for c in advice_checks) / len(advice_checks), 4),
            query_type=checked.value.query_type,
            query_rationale=checked.value.rationale,
            missing_items=missing,
            advice_checks=advice_checks,
        )
        noted = case.model_copy(update={"findings": [*case.findings, *findings, *contradiction]})
        return verdict(noted, doc, validation, thresholds)

    async def align(self, advice: list[str], retriever: Retriever) -> list[AdviceCheck] | None:
        evidence = dict(enumerate(await search_all(retriever, advice, self.k)))
        with_evidence = {i: text for i, text in enumerate(advice) if evidence[i]}
        scores: dict[int, AlignmentScore] = {}
        if with_evidence:
            result = await self.llm.structured(
                align_messages(with_evidence, evidence, self.pack), AlignmentOutput, Settings(temperature=0)
            )
            if result.value is None:
                return None
            positions = list(with_evidence)  # shown number -> position in the advice
            scores = {
                positions[s.advice_index]: s for s in result.value.scores if s.advice_index < len(positions)
            }
        return [_check(i, scores.get(i), evidence[i]) for i in range(len(advice))]


def _check(index: int, score: AlignmentScore | None, evidence: list[EvidenceRef]) -> AdviceCheck:
    if not evidence:
        return AdviceCheck(advice_index=index, score=0.0, rationale="no evidence retrieved")
    if score is None:
        return AdviceCheck(advice_index=index, score=0.0, rationale="not scored", evidence=evidence)
    return AdviceCheck(
        advice_index=index,
        score=0.0 if score.contradicted else score.score,
        contradicted=score.contradicted,
        rationale=score.rationale,
        evidence=evidence,
    )


def clinical(check: QueryCheck) -> tuple[bool, list[str]]:
    """s_cc checked against the query type: a clinical verdict with a non-clinical type is taken as not
    clinical; either contradiction is noted (one finding)."""
    typed = check.query_type != "non_clinical"
    if check.s_cc == typed:
        return check.s_cc, []
    note = f"validator: s_cc={check.s_cc} contradicts query_type {check.query_type!r}; s_cc taken as False"
    return False, [note]


def verdict(case: Case, doc: Doc, validation: Validation, thresholds: Thresholds) -> Case | Rejection:
    """Keep the case only when s_cc holds and both scores are strictly above their thresholds."""
    scores = f"s_cc={validation.s_cc} s_inf={validation.s_inf:.2f} s_align={validation.s_align:.2f}"
    if not validation.s_cc:
        return reject(doc, "invalid_query", f"{scores}; query type {validation.query_type}", stage=STAGE)
    if validation.s_inf <= thresholds.s_inf:
        missing = ", ".join(validation.missing_items)
        return reject(doc, "insufficient_narrative", f"{scores}; missing: {missing}", stage=STAGE)
    if validation.s_align <= thresholds.s_align:
        return reject(doc, "unsupported_advice", f"{scores}; {_advice_scores(validation)}", stage=STAGE)
    return case.model_copy(update={"validation": validation, "status": "validated"})


def _advice_scores(validation: Validation) -> str:
    """Each advice element's score and the evidence behind it, for the rejection's detail."""
    parts = []
    for check in validation.advice_checks:
        evidence = ", ".join(ref.id for ref in check.evidence) or "no evidence retrieved"
        parts.append(f"advice #{check.advice_index} {check.score:g} ({evidence}; {check.rationale})")
    return " | ".join(parts)


def validator_prompt_hash() -> str:
    return short_hash(QUERY_PROMPT, ALIGN_PROMPT)
