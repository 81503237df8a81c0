"""The rubric writer: three recorded LLM steps, then the deterministic checks (one repair or reject).

1. themes  — assign the case themes from the domain's closed, defined list (`rubrics/themes.py`) and
             keep only the facts of the advice (LA) that fall under them (facts and themes off the list
             are dropped in code too, and noted in the step); the narrative is context: a fact that
             only restates it is left out (in code too, `coverage.restates`, for the offline writer
             as well);
2. criteria — turn each fact into binary criteria: positive ones reward the clinically essential core
             (the gold's specifics only as "such as" examples), negative ones penalise a contradiction,
             an invented fact, or an action contraindicated by *this* patient's narrative, never an
             omission ("Fails to …" is linted); each names its source fact;
3. weights — seeing the query, the narrative and the themes, give each criterion an axis and a
             signed integer weight in [-10, 10] within stated bands for both signs; the reply is
             joined to step 2 by the copied criterion text, or by an index set that must be exactly
             0..n-1 (`weights_in_order`), else the step fails.

The case's language is passed on (prompts and criteria stay English). The case's narrative, query
and advice, the facts, the criteria, the draft and the lint findings enter the prompts only as data
blocks (`livemed.common.prompts.data_block`). What each step returned is kept in `Rubric.steps`. The draft
goes through `check.lint` (coverage: only the advice elements step 1 kept); a blocking finding earns
one repair call that returns a PATCH of the flagged criteria (`apply_patch`), then the rubric is kept
(findings recorded) or rejected (a `Rejection`, stage "rubrics", with the first blocking code as its
reason). Before the checks, and again after a repair, the fact-coverage audit (`rubrics/coverage.py`)
drops every criterion resting on a patient fact the candidate's view does not state (a finding
`unseen_fact` each; an advice element left without criteria by it is no longer required); the
rubric records the audit (`Rubric.fact_coverage`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from livemed.domains import DomainPack, medical
from livemed.models import LLM, Message, Settings
from livemed.records import Case, Provenance, Record, Rejection, Rubric, short_hash
from livemed.rubrics.check import DraftCriterion, Finding, lint, settle, to_criteria
from livemed.rubrics.coverage import keep_seen, unseen_advice, without_restated
from livemed.rubrics.prompts import (
    THEMES,
    criteria_prompt,
    prompt_hash,
    repair_prompt,
    themes_prompt,
    weights_prompt,
)
from livemed.rubrics.themes import listed, pack_themes

STAGE = "rubrics"
WRITER_SETTINGS = Settings(temperature=0)


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
    text: str = ""
    axis: str
    weight: int


class WeightedList(BaseModel):
    model_config = ConfigDict(extra="ignore")
    criteria: list[Weighted]


class PatchItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int
    drop: bool = False
    criterion: DraftCriterion | None = None


class Patch(BaseModel):
    """The repair: the flagged criteria replaced or dropped (by number), and criteria added."""

    model_config = ConfigDict(extra="ignore")
    replace: list[PatchItem] = Field(default_factory=list)
    add: list[DraftCriterion] = Field(default_factory=list)


@runtime_checkable
class OfflineWriter(Protocol):
    """A no-LLM rubric writer baseline: returns drafts and its recorded steps."""

    @property
    def id(self) -> str: ...

    def draft(self, case: Case) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]: ...


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


async def llm_drafts(
    case: Case, llm: LLM, pack: DomainPack | None = None
) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]:
    """Run the three steps with the pack's prompts; raises StepFailed when a step gives no valid output."""
    pack = pack or medical()
    steps: list[dict[str, Any]] = []
    themed: ThemedFacts = await _step(llm, "themes", themes_prompt(case, pack), ThemedFacts, steps)
    themes, facts = on_the_list(themed, steps[-1], pack_themes(pack))
    drop_restated(case, steps[-1], pack)  # the advice left with no fact is then not required
    facts = [Fact.model_validate(f) for f in steps[-1]["output"]["facts"]]
    if not facts:
        raise StepFailed("themes", "every fact only restates the narrative")
    formulated: FormulatedList = await _step(
        llm, "criteria", criteria_prompt(case, [f.fact for f in facts], pack), FormulatedList, steps
    )
    pairs = [(c.polarity, c.text) for c in formulated.criteria]
    weighted: WeightedList = await _step(
        llm, "weights", weights_prompt(case, pairs, themes, pack), WeightedList, steps
    )
    return themes, _combine(facts, formulated.criteria, weights_in_order(pairs, weighted.criteria)), steps


def on_the_list(
    themed: ThemedFacts, step: dict[str, Any], listing: Mapping[str, str] = THEMES
) -> tuple[list[str], list[Fact]]:
    """Step 1's themes and facts kept to the closed theme list (what was dropped noted in `step`)."""
    themes = [t for t in themed.themes if listed(t, listing)]
    kept: list[Fact] = []
    dropped: list[str] = []
    for fact in themed.facts:
        own = [t for t in fact.themes if listed(t, listing)]
        if own:
            kept.append(fact.model_copy(update={"themes": own}))
        else:
            dropped.append(fact.fact)
    step["output"] = {"themes": themes, "facts": [f.model_dump() for f in kept]}
    unlisted = [t for t in themed.themes if not listed(t, listing)]
    if dropped or unlisted:
        step["dropped"] = {"facts": dropped, "themes": unlisted}
    if not kept:
        raise StepFailed("themes", "no fact falls under a listed theme")
    return themes or sorted({t for f in kept for t in f.themes}), kept


def drop_restated(case: Case, step: dict[str, Any], pack: DomainPack | None = None) -> set[int | None]:
    """Step 1's facts without those that only restate the candidate's view (`coverage.restates`),
    the dropped ones noted in the step; returns the advice elements left with no fact."""
    facts = step.get("output", {}).get("facts", [])
    kept, restated = without_restated(case, [f["fact"] for f in facts], pack)
    if not restated:
        return set()
    step.setdefault("dropped", {})["restated"] = [facts[i]["fact"] for i in restated]
    step["output"]["facts"] = [facts[i] for i in kept]
    return {facts[i].get("advice_index") for i in restated} - {facts[i].get("advice_index") for i in kept}


def weights_in_order(criteria: Sequence[tuple[str, str]], weighted: list[Weighted]) -> list[Weighted]:
    """Step 3's answer in step 2's order: matched by the copied criterion text when every entry's
    matches, else by index, which must be exactly 0..n-1 (a reply numbered from 1 would shift every
    weight by one); anything else raises StepFailed."""
    texts = [_norm(text) for _, text in criteria]
    by_text = {_norm(w.text): w for w in weighted if w.text.strip()}
    if len(by_text) == len(weighted) == len(texts) and set(by_text) == set(texts):
        return [by_text[t] for t in texts]
    indices = sorted(w.index for w in weighted)
    if indices != list(range(len(criteria))):
        shown = ", ".join(str(i) for i in indices[:12])
        raise StepFailed("weights", f"indices [{shown}] are not exactly 0..{len(criteria) - 1}")
    by_index = {w.index: w for w in weighted}
    return [by_index[n] for n in range(len(criteria))]


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def _combine(
    facts: list[Fact], formulated: list[Formulated], weighted: list[Weighted]
) -> list[DraftCriterion]:
    drafts = []
    for item, w in zip(formulated, weighted, strict=True):
        fact = facts[item.fact_index] if 0 <= item.fact_index < len(facts) else None
        drafts.append(
            DraftCriterion(
                text=item.text,
                polarity=item.polarity,
                axis=w.axis,
                weight=w.weight,
                theme=(fact.themes[0] if fact and fact.themes else None),
                source_fact=fact.fact if fact else None,
                advice_index=fact.advice_index if fact else None,
            )
        )
    return drafts


def apply_patch(drafts: list[DraftCriterion], patch: Patch) -> list[DraftCriterion]:
    """The draft with the patch's replacements, drops (by number; unknown numbers ignored) and additions."""
    out: list[DraftCriterion | None] = list(drafts)
    for item in patch.replace:
        if 0 <= item.index < len(out):
            out[item.index] = None if item.drop or item.criterion is None else item.criterion
    return [d for d in out if d is not None] + list(patch.add)


async def _repair(
    case: Case,
    llm: LLM,
    drafts: list[DraftCriterion],
    findings: list[Finding],
    steps: list[dict[str, Any]],
    pack: DomainPack | None = None,
) -> list[DraftCriterion] | None:
    prompt = repair_prompt(case, drafts, findings, pack)
    try:
        patch: Patch = await _step(llm, "repair", prompt, Patch, steps)
    except StepFailed:
        return None
    return apply_patch(drafts, patch)


def required_advice(case: Case, steps: list[dict[str, Any]]) -> set[int]:
    """The advice elements the rubric must cover: those step 1 kept facts from (all, without step 1)."""
    first = steps[0] if steps and steps[0].get("step") == "themes" else None
    if first is None:
        return set(range(len(case.advice)))
    facts = first.get("output", {}).get("facts", [])
    return {f["advice_index"] for f in facts if isinstance(f.get("advice_index"), int)}


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


async def write_rubric(
    case: Case, writer: LLM | OfflineWriter, pack: DomainPack | None = None
) -> list[Record]:
    """A checked Rubric for `case`, or a Rejection saying why there is none, for the domain pack's
    axes, weight ranges and themes (default: medical)."""
    try:
        if isinstance(writer, OfflineWriter):
            themes, drafts, steps = writer.draft(case)
            restated = drop_restated(case, steps[0], pack) if steps else set()
            drafts = [d for d in drafts if d.polarity == "negative" or d.advice_index not in restated]
        else:
            themes, drafts, steps = await llm_drafts(case, writer, pack)
    except StepFailed as exc:
        return [_reject(case, f"{exc.step}_failed", str(exc))]
    drafts, fixed = settle(drafts, pack)
    drafts, audit, unseen = keep_seen(case, drafts, pack)
    required = required_advice(case, steps) - unseen_advice(unseen, drafts)
    findings = lint(drafts, case.advice, case.query, required=required, pack=pack)
    notes = [str(f) for f in fixed] + [u.finding for u in unseen]
    if any(f.blocking for f in findings) and isinstance(writer, LLM):
        notes += [f"before repair: {f}" for f in findings]
        repaired = await _repair(case, writer, drafts, findings, steps, pack)
        if repaired is not None:
            drafts, fixed = settle(repaired, pack)
            drafts, again, unseen_again = keep_seen(case, drafts, pack)
            audit = replace(again, dropped=audit.dropped + again.dropped)
            notes += [str(f) for f in fixed] + [u.finding for u in unseen_again]
            findings = lint(drafts, case.advice, case.query, required=required, pack=pack)
    blocking = [f for f in findings if f.blocking]
    if blocking:
        return [_reject(case, blocking[0].code, "; ".join(str(f) for f in blocking))]
    prompt_hash_ = None if isinstance(writer, OfflineWriter) else prompt_hash(pack)
    provenance = Provenance(model_id=writer.id, prompt_hash=prompt_hash_, settings={"temperature": 0})
    return [
        Rubric(
            case_id=case.id,
            criteria=to_criteria(drafts),
            themes=themes,
            findings=notes + [str(f) for f in findings],
            fact_coverage=audit.record(),
            steps=steps,
            published=case.published,
            provenance=provenance,
        )
    ]
