"""`offline/curate-baseline`: a rule-based stand-in for the curation LLM (a BASELINE, not a model).

It speaks the `Model` protocol so the chain runs unchanged (cache, accounting, provenance): it reads
the task from the requested JSON schema's name and its inputs from the prompt's data blocks, and
answers with rules —

- Screener: labelled sections and sentence cues (age/sex regexes, the domain pack's narrative cues —
  medical: symptom and history words —, question sentences from the asker, recommendation cues in
  the replies);
- Validator: query types by keyword for s_cc (the pack's; medical: Ely's categories), the checklist
  from the narrative fields for s_inf, and lexical overlap between each advice element and its
  retrieved evidence for s_align (≥ 50% of the advice's content words in the evidence → 1.0,
  ≥ 25% → 0.5, else 0.0);
- Controller: it never vouches for a paraphrase, so only the deterministic fuzzy audit counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from pydantic import BaseModel

from livemed.common.prompts import Block, parse_blocks
from livemed.common.text import content_words
from livemed.curate import rules
from livemed.curate.controller import AuditOutput
from livemed.curate.screener import ScreenerOutput, screener_output
from livemed.curate.sections import diagnostic_query
from livemed.curate.validator import AlignmentOutput, AlignmentScore, ItemCheck, QueryCheck
from livemed.domains import DomainPack, medical
from livemed.models.base import Completion, FatalModelError, Message, Settings
from livemed.records import Narrative

# Query types by keyword (the first match names the type): the domain pack's `[offline.query_cues]`;
# the medical pack's are Ely's categories.
ELY = medical().offline.query_cues
_STOPWORDS = (
    "the and for you your with that this are not but can will should would could have has had been "
    "from they them their its also any all some more most very much may might must please make sure "
    "try recommend suggest advise would like just get take use well about into than then there what "
    "when which who how why our out over such only other each few own same too both doing does did"
)
_STOP = frozenset(_STOPWORDS.split())
_ALNUM = re.compile(r"[a-z0-9]+")
_SHORTEST = 3  # a content word of the offline baseline has at least 3 letters


def _tokens(text: str) -> list[str]:
    return _ALNUM.findall(text.lower())


def screen(prompt: str, pack: DomainPack | None = None) -> ScreenerOutput:
    pack = pack or medical()
    blocks = parse_blocks(prompt)
    text = {b.name: b.text for b in blocks}
    output = screener_output(pack)
    if "report" in text:
        report = text["report"]
        query = rules.derived_query(report)
        diagnostic = diagnostic_query(query, pack)
        narrative = rules.extract_narrative(report, report=True, diagnostic=diagnostic, pack=pack)
        return output(
            narrative=narrative.by_slot(pack.narrative_slots),
            query=query,
            advice=rules.extract_advice(report, report=True),
        )
    post = text.get("post", "")
    questions = rules.extract_questions(post) or rules.extract_questions(text.get("title", ""))
    answers = "\n".join(b.text for b in blocks if b.name == "answer")
    return output(
        narrative=rules.extract_narrative(post, pack=pack).by_slot(pack.narrative_slots),
        query=" ".join(questions),
        advice=rules.extract_advice(answers),
    )


def check_query(prompt: str, pack: DomainPack | None = None) -> QueryCheck:
    blocks = {b.name: b for b in parse_blocks(prompt)}
    query = blocks["query"].text if "query" in blocks else ""
    derived = "query" in blocks and blocks["query"].attrs.get("derived") == "true"
    cues = (pack or medical()).offline.query_cues
    kinds = [kind for kind, pattern in cues.items() if re.search(pattern, query, re.IGNORECASE)]
    narrative = (
        Narrative.model_validate_json(blocks["narrative"].text) if "narrative" in blocks else Narrative()
    )
    line = re.search(r"^Checklist: (.*)$", prompt, re.MULTILINE)
    items = [re.sub(r"^\d+\.\s*", "", i.strip()) for i in line.group(1).split(";")] if line else []
    clinical = bool(kinds) and (derived or "?" in query)
    cued = ", ".join(kinds) or "none"
    asked = "derived from a report" if derived else "a question" if "?" in query else "no question mark"
    return QueryCheck(
        rationale=f"rule-based: query-type cues matched: {cued}; the query is {asked}",
        query_type=kinds[0] if clinical else "non_clinical",
        s_cc=clinical,
        items=[
            ItemCheck(index=n, item=item, present=item_present(item, narrative, pack))
            for n, item in enumerate(items)
        ],
    )


def item_present(item: str, narrative: Narrative, pack: DomainPack | None = None) -> bool:
    """Does the narrative state a checklist item? Age and sex by pattern, an item the pack maps to a
    narrative slot (`checklist_fields`) by that slot, anything else by shared content words."""
    key = item.lower()
    fields = (pack or medical()).checklist_fields
    if key == "age":
        return any(rules.AGE.search(f) for f in narrative.demographics)
    if key in ("sex", "gender"):
        return any(rules.SEX.search(f) for f in narrative.demographics)
    if key in fields:
        return bool(narrative.slot(fields[key]))
    words = set(content_words(_tokens(item), skip=_STOP, shortest=_SHORTEST))
    return any(
        words.intersection(content_words(_tokens(fact), skip=_STOP, shortest=_SHORTEST))
        for _, fact in narrative.entities()
    )


def align(prompt: str) -> AlignmentOutput:
    advice: dict[int, str] = {}
    evidence: dict[int, list[Block]] = {}
    for block in parse_blocks(prompt):
        index = int(block.attrs.get("i", "-1"))
        if block.name == "advice":
            advice[index] = block.text
        elif block.name == "evidence":
            evidence.setdefault(index, []).append(block)
    return AlignmentOutput(scores=[_lexical(i, text, evidence.get(i, [])) for i, text in advice.items()])


def _lexical(index: int, advice: str, evidence: list[Block]) -> AlignmentScore:
    words = set(content_words(_tokens(advice), skip=_STOP, shortest=_SHORTEST))
    best = (
        max(
            (
                len(words.intersection(content_words(_tokens(b.text), skip=_STOP, shortest=_SHORTEST)))
                / len(words)
                for b in evidence
            ),
            default=0.0,
        )
        if words
        else 0.0
    )
    score = 1.0 if best >= 0.5 else 0.5 if best >= 0.25 else 0.0
    return AlignmentScore(advice_index=index, score=score, rationale=f"lexical overlap {best:.2f}")


TASKS: dict[str, Callable[[str, DomainPack], BaseModel]] = {
    "ScreenerOutput": screen,
    "QueryCheck": check_query,
    "AlignmentOutput": lambda prompt, _: align(prompt),
    "AuditOutput": lambda prompt, _: AuditOutput(),
}


class CurationBaseline:
    """The rule-based offline curation baseline, as a `Model`, for one domain pack (default medical)."""

    id = "offline/curate-baseline"
    endpoint = "in-process"
    supports_json_schema = True

    def __init__(self, pack: DomainPack | None = None) -> None:
        self.pack = pack or medical()

    async def generate(self, messages: list[Message], *, settings: Settings) -> Completion:
        task = (settings.json_schema or {}).get("name", "")
        if task not in TASKS:
            raise FatalModelError(f"{self.id} only answers the curation prompts (got schema {task!r})")
        prompt = "\n".join(m["content"] for m in messages if m["role"] == "user")
        text = json.dumps(TASKS[task](prompt, self.pack).model_dump(mode="json"))
        return Completion(text=text, finish_reason="stop", model=self.id)


def curate_baseline(pack: DomainPack | None = None) -> CurationBaseline:
    return CurationBaseline(pack)
