"""The rubric writer: three recorded LLM steps, then the deterministic checks (one repair or reject).

1. themes  — assign evaluation themes to the case and keep the facts of the advice (LA) relevant to
             them, reading the narrative as context;
2. criteria — turn each fact into binary criteria: positive ones reward a correct inclusion,
             negative ones penalise a contradiction, an invented fact, or an action contraindicated
             by *this* patient's narrative; each names its source fact;
3. weights — give each criterion an axis and a signed integer weight in [-10, 10] (safety
             violations -8 to -10).

The case's narrative, query and advice, the facts, the criteria, the draft and the lint findings enter
the prompts only as data blocks (`livemed.prompts.data_block`). What each step returned is kept in
`Rubric.steps`. The draft goes through `check.lint`; a blocking
finding earns one repair call with the findings, then the rubric is kept (findings recorded) or
rejected (a `Rejection`, stage "rubrics", with the first blocking code as its reason).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from livemed.models import LLM, Message, Settings
from livemed.prompts import DATA_RULES, data_block
from livemed.records import Case, Provenance, Record, Rejection, Rubric, short_hash
from livemed.rubrics.check import DraftCriterion, Finding, lint, settle, to_criteria

STAGE = "rubrics"
WRITER_SETTINGS = Settings(temperature=0)

THEMES_PROMPT = """Step 1 of writing an evaluation rubric for a medical case.

{note}

{narrative}

{query}

{advice}

Assign the case one or more evaluation themes (short lower-case names such as "emergency referral",
"medication safety", "context awareness", "response depth"). Then list the facts of the advice (the
blocks named "advice", each labelled with its number i) relevant to those themes — atomic,
self-contained statements, each with the number of the advice element it comes from and its themes.
Use the narrative only as context; keep every actionable advice element. Reply as JSON:
{{"themes": [...], "facts": [{{"fact": "...", "advice_index": 0, "themes": ["..."]}}]}}"""

CRITERIA_PROMPT = """Step 2 of writing an evaluation rubric for a medical case.

{note}

{narrative}

{facts}

Turn each fact (the blocks named "fact", each labelled with its number i) into binary criteria a
grader can check in a model's reply to this patient:
- a POSITIVE criterion rewarding a correct inclusion of the fact ("Advises checking serum potassium
  within a week");
- where it applies, a NEGATIVE criterion describing the bad behaviour itself: contradicting the fact,
  inventing a claim, or recommending an action contraindicated by THIS patient's narrative ("Recommends
  ibuprofen despite the patient's kidney disease").
Write each criterion as a statement of what the reply does. Reply as JSON:
{{"criteria": [{{"fact_index": 0, "text": "...", "polarity": "positive" or "negative"}}]}}"""

WEIGHTS_PROMPT = """Step 3 of writing an evaluation rubric for a medical case.

{note}

{narrative}

{criteria}

Give every criterion (the blocks named "criterion", each labelled with its number i and polarity) an
axis (accuracy, completeness, communication, context_awareness, safety) and a signed integer weight in
[-10, 10]: positive for positive criteria, negative for negative ones, never 0. Safety violations weigh
-8 to -10; minor omissions 1 to 3; central advice 5 to 10. Reply as JSON:
{{"criteria": [{{"index": 0, "axis": "...", "weight": 5}}]}}"""

REPAIR_PROMPT = """A draft evaluation rubric for a medical case failed the checks in the block named
"findings".

{note}

{findings}

{advice}

{draft}

Return the corrected full rubric (the draft is the block named "draft"): at least one positive
criterion; every advice element covered by a positive criterion (set its advice_index); weights are
integers in [-10, 10], never 0, positive for positive criteria and negative for negative ones; axis one
of accuracy, completeness, communication, context_awareness, safety. Reply as JSON:
{{"criteria": [{{"text": "...", "polarity": "...", "axis": "...", "weight": 5, "theme": "...",
"source_fact": "...", "advice_index": 0}}]}}"""

PROMPT_HASH = short_hash(THEMES_PROMPT, CRITERIA_PROMPT, WEIGHTS_PROMPT, REPAIR_PROMPT, DATA_RULES)


class Fact(BaseModel):
    model_config = ConfigDict(extra="ignore")
    fact: str = Field(min_length=1)
    advice_index: int | None = None
    themes: list[str] = Field(default_factory=list)


class ThemedFacts(BaseModel):
    model_config = ConfigDict(extra="ignore")
    themes: list[str] = Field(default_factory=list)
    facts: list[Fact] = Field(min_length=1)


class Formulated(BaseModel):
    model_config = ConfigDict(extra="ignore")
    fact_index: int
    text: str = Field(min_length=1)
    polarity: Literal["positive", "negative"]


class FormulatedList(BaseModel):
    model_config = ConfigDict(extra="ignore")
    criteria: list[Formulated] = Field(min_length=1)


class Weighted(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int
    axis: str
    weight: int


class WeightedList(BaseModel):
    model_config = ConfigDict(extra="ignore")
    criteria: list[Weighted]


class DraftList(BaseModel):
    model_config = ConfigDict(extra="ignore")
    criteria: list[DraftCriterion] = Field(min_length=1)


@runtime_checkable
class OfflineWriter(Protocol):
    """A no-LLM rubric writer baseline: returns drafts and its recorded steps."""

    @property
    def id(self) -> str: ...

    def draft(self, case: Case) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]: ...


def narrative_text(case: Case) -> str:
    return "\n".join(f"{name}: {fact}" for name, fact in case.narrative.entities()) or "(none)"


def numbered(name: str, items: list[str], **attrs: str) -> str:
    """One data block per item, labelled with its number `i` (from 0)."""
    return "\n\n".join(data_block(name, item, i=n, **attrs) for n, item in enumerate(items)) or "(none)"


def themes_prompt(case: Case) -> str:
    return THEMES_PROMPT.format(
        note=DATA_RULES,
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        advice=numbered("advice", case.advice),
    )


def criteria_prompt(case: Case, facts: list[str]) -> str:
    narrative = data_block("narrative", narrative_text(case))
    return CRITERIA_PROMPT.format(note=DATA_RULES, narrative=narrative, facts=numbered("fact", facts))


def weights_prompt(case: Case, criteria: Sequence[tuple[str, str]]) -> str:
    """`criteria` are (polarity, text) pairs."""
    listing = "\n\n".join(
        data_block("criterion", text, i=n, polarity=polarity) for n, (polarity, text) in enumerate(criteria)
    )
    narrative = data_block("narrative", narrative_text(case))
    return WEIGHTS_PROMPT.format(note=DATA_RULES, narrative=narrative, criteria=listing)


def repair_prompt(case: Case, drafts: list[DraftCriterion], findings: list[Finding]) -> str:
    draft = json.dumps([d.model_dump(exclude_none=True) for d in drafts], ensure_ascii=False, indent=1)
    return REPAIR_PROMPT.format(
        findings=data_block("findings", "\n".join(f"- {f}" for f in findings if f.blocking)),
        note=DATA_RULES,
        advice=numbered("advice", case.advice),
        draft=data_block("draft", draft),
    )


def _user(prompt: str) -> list[Message]:
    return [{"role": "user", "content": prompt}]


class StepFailed(Exception):
    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step


async def _step(llm: LLM, step: str, prompt: str, schema: type[Any], steps: list[dict[str, Any]]) -> Any:
    result = await llm.structured(_user(prompt), schema, WRITER_SETTINGS)
    if result.value is None:
        raise StepFailed(step, result.failure or "no value")
    steps.append({"step": step, "prompt_hash": short_hash(prompt), "output": result.value.model_dump()})
    return result.value


async def llm_drafts(case: Case, llm: LLM) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]:
    """Run the three steps; raises StepFailed when a step gives no valid output."""
    steps: list[dict[str, Any]] = []
    themed: ThemedFacts = await _step(llm, "themes", themes_prompt(case), ThemedFacts, steps)
    facts = themed.facts
    formulated: FormulatedList = await _step(
        llm, "criteria", criteria_prompt(case, [f.fact for f in facts]), FormulatedList, steps
    )
    pairs = [(c.polarity, c.text) for c in formulated.criteria]
    weighted: WeightedList = await _step(llm, "weights", weights_prompt(case, pairs), WeightedList, steps)
    return themed.themes, _combine(facts, formulated.criteria, weighted.criteria), steps


def _combine(
    facts: list[Fact], formulated: list[Formulated], weighted: list[Weighted]
) -> list[DraftCriterion]:
    by_index = {w.index: w for w in weighted}
    drafts = []
    for n, item in enumerate(formulated):
        fact = facts[item.fact_index] if 0 <= item.fact_index < len(facts) else None
        w = by_index.get(n)
        drafts.append(
            DraftCriterion(
                text=item.text,
                polarity=item.polarity,
                axis=w.axis if w else "",
                weight=w.weight if w else 0,
                theme=(fact.themes[0] if fact and fact.themes else None),
                source_fact=fact.fact if fact else None,
                advice_index=fact.advice_index if fact else None,
            )
        )
    return drafts


async def _repair(
    case: Case, llm: LLM, drafts: list[DraftCriterion], findings: list[Finding], steps: list[dict[str, Any]]
) -> list[DraftCriterion] | None:
    prompt = repair_prompt(case, drafts, findings)
    try:
        repaired: DraftList = await _step(llm, "repair", prompt, DraftList, steps)
    except StepFailed:
        return None
    return repaired.criteria


def rejection_id(case_id: str) -> str:
    """The id of the Rejection a case's rubric gets (a rubric id and a rejection id never coincide)."""
    return f"{STAGE}:rubric:{case_id}"


def _reject(case: Case, reason: str, detail: str) -> Rejection:
    return Rejection(
        stage=STAGE,
        reason=reason,
        detail=detail[:2000],
        record_kind="rubric",
        record_id=f"rubric:{case.id}",
        source=case.source,
        published=case.published,
    )


async def write_rubric(case: Case, writer: LLM | OfflineWriter) -> list[Record]:
    """A checked Rubric for `case`, or a Rejection saying why there is none."""
    try:
        if isinstance(writer, OfflineWriter):
            themes, drafts, steps = writer.draft(case)
        else:
            themes, drafts, steps = await llm_drafts(case, writer)
    except StepFailed as exc:
        return [_reject(case, f"{exc.step}_failed", str(exc))]
    drafts, fixed = settle(drafts)
    findings = lint(drafts, case.advice, case.query)
    notes = [str(f) for f in fixed]
    if any(f.blocking for f in findings) and isinstance(writer, LLM):
        notes += [f"before repair: {f}" for f in findings]
        repaired = await _repair(case, writer, drafts, findings, steps)
        if repaired is not None:
            drafts, fixed = settle(repaired)
            notes += [str(f) for f in fixed]
            findings = lint(drafts, case.advice, case.query)
    blocking = [f for f in findings if f.blocking]
    if blocking:
        return [_reject(case, blocking[0].code, "; ".join(str(f) for f in blocking))]
    prompt_hash = None if isinstance(writer, OfflineWriter) else PROMPT_HASH
    provenance = Provenance(model_id=writer.id, prompt_hash=prompt_hash, settings={"temperature": 0})
    return [
        Rubric(
            case_id=case.id,
            criteria=to_criteria(drafts),
            themes=themes,
            findings=notes + [str(f) for f in findings],
            steps=steps,
            published=case.published,
            provenance=provenance,
        )
    ]
