"""The Validator: scores a draft case and rejects weak ones.

- s_cc: is Q a clinically meaningful question (Ely's taxonomy of clinical questions in the prompt);
- s_inf: the fraction of a checklist of narrative items that are present (configurable per case type);
- s_align: each advice element is checked against retrieved evidence — 1.0 supported, 0.5 partially,
  0.0 unsupported; an element with no evidence retrieved scores 0.0 without asking the model; the mean.

A case is kept only when s_cc is true and s_inf and s_align are strictly above their thresholds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from livemed.config import Thresholds
from livemed.curate.evidence import RetrievalError, Retriever, search_all
from livemed.curate.screener import reject
from livemed.models import LLM, Message, Settings
from livemed.prompts import DATA_RULES, data_block
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

ELY_TAXONOMY = """\
Ely's taxonomy of clinical questions (Ely et al., BMJ 2000) groups the questions clinicians and
patients ask into: diagnosis (what is the cause of this finding? what test is indicated?),
treatment and prescribing (what is the drug of choice? what dose? is this treatment effective?),
management (how should this condition be managed? what is the next step? should I see a specialist?),
epidemiology, prognosis (what is the course or outcome? is this serious?), etiology (what causes this
condition? can this drug cause this finding?), history and physical findings, test interpretation,
and non-clinical questions (administrative, legal, personal). A question is clinically meaningful
when it belongs to one of the clinical categories and is about this patient's problem."""

QUERY_PROMPT = f"""\
You are the Validator of a medical benchmark curation pipeline.

1. s_cc: decide whether the query is a clinically meaningful question about the patient.
{ELY_TAXONOMY}
   Set query_type to the matching category (or "non_clinical").
2. For each checklist item, say whether the narrative states it (present true/false).

{DATA_RULES}
"""

ALIGN_PROMPT = f"""\
You are the Validator of a medical benchmark curation pipeline. For each advice element, judge it
against the evidence passages shown with it: score 1.0 when the evidence supports it, 0.5 when the
evidence partially supports it, 0.0 when the evidence does not support it or contradicts it. Use only
the evidence shown, not your own knowledge.

{DATA_RULES}
"""


class ItemCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item: str
    present: bool


class QueryCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    s_cc: bool
    query_type: str = ""
    items: list[ItemCheck] = Field(default_factory=list)


class AlignmentScore(BaseModel):
    model_config = ConfigDict(extra="forbid")

    advice_index: int = Field(ge=0)
    score: float = Field(json_schema_extra={"enum": [0.0, 0.5, 1.0]})
    rationale: str = ""

    @field_validator("score")
    @classmethod
    def _three_levels(cls, score: float) -> float:
        if score not in (0.0, 0.5, 1.0):
            raise ValueError("score must be 0.0, 0.5 or 1.0")
        return score


class AlignmentOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: list[AlignmentScore] = Field(default_factory=list)


def query_messages(case: Case, checklist: Sequence[str]) -> list[Message]:
    narrative = json.dumps(case.narrative.model_dump(), ensure_ascii=False, indent=1)
    user = (
        "Checklist: "
        + "; ".join(checklist)
        + "\n\n"
        + data_block("query", case.query, derived=str(case.query_derived).lower())
        + "\n\n"
        + data_block("narrative", narrative)
    )
    return [{"role": "system", "content": QUERY_PROMPT}, {"role": "user", "content": user}]


def align_messages(advice: Mapping[int, str], evidence: Mapping[int, list[EvidenceRef]]) -> list[Message]:
    blocks = []
    for index, text in advice.items():
        blocks.append(data_block("advice", text, i=index))
        blocks.extend(data_block("evidence", ref.snippet, i=index, id=ref.id) for ref in evidence[index])
    user = "\n\n".join(blocks)
    return [{"role": "system", "content": ALIGN_PROMPT}, {"role": "user", "content": user}]


class Validator:
    """Scores s_cc, s_inf and s_align with a model and a retriever."""

    prompt = QUERY_PROMPT + ALIGN_PROMPT

    def __init__(
        self, llm: LLM, *, checklists: Mapping[str, Sequence[str]] | None = None, k: int = 3
    ) -> None:
        self.llm = llm
        self.checklists = dict(checklists or {})
        self.k = k

    def checklist(self, doc: Doc) -> Sequence[str]:
        return self.checklists.get(doc.doc_type) or self.checklists.get("default") or DEFAULT_CHECKLIST

    async def validate(
        self, case: Case, doc: Doc, *, retriever: Retriever, thresholds: Thresholds
    ) -> Case | Rejection:
        checklist = self.checklist(doc)
        checked = await self.llm.structured(
            query_messages(case, checklist), QueryCheck, Settings(temperature=0)
        )
        if checked.value is None:
            return reject(doc, "validator_failed", checked.failure or "no output", stage=STAGE)
        try:
            advice_checks = await self.align(case.advice, retriever)
        except RetrievalError as exc:  # retried on the next run, unlike "unsupported_advice"
            return reject(doc, "retrieval_failed", str(exc), stage=STAGE)
        if advice_checks is None:
            return reject(doc, "validator_failed", "the alignment call failed", stage=STAGE)
        present = {c.item.strip().lower() for c in checked.value.items if c.present}
        missing = [item for item in checklist if item.lower() not in present]
        validation = Validation(
            s_cc=checked.value.s_cc,
            s_inf=round((len(checklist) - len(missing)) / len(checklist), 4),
            s_align=round(sum(c.score for c in advice_checks) / len(advice_checks), 4),
            query_type=checked.value.query_type or None,
            missing_items=missing,
            advice_checks=advice_checks,
        )
        return verdict(case, doc, validation, thresholds)

    async def align(self, advice: list[str], retriever: Retriever) -> list[AdviceCheck] | None:
        evidence = dict(enumerate(await search_all(retriever, advice, self.k)))
        with_evidence = {i: text for i, text in enumerate(advice) if evidence[i]}
        scores: dict[int, AlignmentScore] = {}
        if with_evidence:
            result = await self.llm.structured(
                align_messages(with_evidence, evidence), AlignmentOutput, Settings(temperature=0)
            )
            if result.value is None:
                return None
            scores = {s.advice_index: s for s in result.value.scores if s.advice_index in with_evidence}
        return [_check(i, scores.get(i), evidence[i]) for i in range(len(advice))]


def _check(index: int, score: AlignmentScore | None, evidence: list[EvidenceRef]) -> AdviceCheck:
    if not evidence:
        return AdviceCheck(advice_index=index, score=0.0, rationale="no evidence retrieved")
    if score is None:
        return AdviceCheck(advice_index=index, score=0.0, rationale="not scored", evidence=evidence)
    return AdviceCheck(advice_index=index, score=score.score, rationale=score.rationale, evidence=evidence)


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
