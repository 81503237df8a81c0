"""The Controller: a grounding audit of every narrative entity and advice element. It never rewrites.

Each element must be traceable to explicit text in the source: narrative entities in the title and
the asker's post (threads; never the replies) or the report's presentation (case reports: not its
management, outcome or discussion sections, and, when the case is diagnostic, not its title, abstract
or introduction either, `narrative_source`), advice in the replies it may come from (physician,
verified or accepted answers for threads; the report for case reports). The deterministic audit
matches each element (rapidfuzz, normalised text; see `grounding.locate`) and stores the matched source
span. An optional LLM audit then looks at the elements the fuzzy match missed (paraphrases): the model
must quote the supporting source text, the quote must be found in the source, and the source span
found must state the element (`states`: enough of its content words, the same negation and every
number it gives), checked deterministically before it is accepted. `requests` are the LLM audit's
messages for a case, exactly as the pipeline sends them (the prompt snapshots render them). Any
element still ungrounded rejects the case (refused quotes named in the detail).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from livemed.common.numbers import numbers
from livemed.common.prompts import DATA_RULES, data_block
from livemed.common.text import clauses, content_words, negated, overlap, stem, words
from livemed.common.word_tables import NEGATIONS, STOPWORDS
from livemed.curate.grounding import Normalised, locate, normalise
from livemed.curate.screener import advice_texts, is_thread, reject
from livemed.curate.sections import FRONT_MATTER, HELD_BACK, is_diagnostic, sections
from livemed.domains import DomainPack, medical
from livemed.models.base import Message, Settings
from livemed.models.llm import LLM
from livemed.models.structured import Reason
from livemed.records import Case, Doc, GroundedSpan, GroundingAudit, Rejection

STAGE = "controller"
DEFAULT_MIN_SCORE = 90.0
QUOTE_SUPPORT = 0.25  # the share of an element's content words its quote must hold


def audit_prompt(pack: DomainPack | None = None) -> str:
    """The LLM audit's prompt: the domain pack's `prompts/controller_audit.txt`."""
    return (pack or medical()).render("controller_audit", data_rules=DATA_RULES)


AUDIT_PROMPT = audit_prompt()  # the medical pack's


class ElementVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    rationale: Reason  # why the source does or does not state it, before the verdict
    quote: str = ""  # the source words that state the element, before the verdict they support
    grounded: bool


class AuditOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    elements: list[ElementVerdict] = Field(default_factory=list)


def narrative_source(doc: Doc, *, diagnostic: bool = False) -> str:
    """Where narrative facts may come from: the title and the asker's post (never the replies), or a
    case report's title and presentation (its management, outcome, follow-up and discussion sections
    left out, `sections.HELD_BACK`); for a `diagnostic` case report, neither the title nor the
    abstract or introduction (`sections.FRONT_MATTER`): they usually name the diagnosis."""
    if is_thread(doc):
        return "\n\n".join(part for part in (doc.title, doc.text) if part)
    held = HELD_BACK | FRONT_MATTER if diagnostic else HELD_BACK
    presentation = [" ".join(s.sentences) for s in sections(doc.text) if s.heading not in held]
    return "\n\n".join(part for part in (None if diagnostic else doc.title, *presentation) if part)


def states(quote: str, element: str) -> bool:
    """Does the quote state the element? A lexical floor: at least `QUOTE_SUPPORT` of the element's
    content words, and two of them (all, when it has fewer), are in the quote (stemmed, spelling
    variants allowed: `common.text.overlap`); each of the element's clauses is negated exactly when
    the quote's clause that holds its words is (`same_negation`: "Do not use aspirin" does not state
    "Use aspirin", "… with no adverse events" does not negate the treatment before it); and the quote
    gives every value the element gives, as often (`livemed.common.numbers`: "50 mg" does not state "500 mg",
    "four" is "4"; a number the quote adds, the "24" of "in 24 hours", is allowed) under the same
    bound ("up to 4 g" is "no more than 4 g", not "more than 4 g"). It refuses a real quote about
    something else or its opposite; it cannot tell a subtle misstatement from a paraphrase. An
    element with no content words ("I have no allergies": the lexical grader reads "allergies" as a
    negation cue) is stated by a quote that holds its words as they stand."""
    want = len({stem(w) for w in content_words(words(element))})
    if not want:
        return f" {normalise(element).text} " in f" {normalise(quote).text} "
    if not same_negation(quote, element) or not _bounds(element) <= _bounds(quote):
        return False
    if not numbers(element) <= numbers(quote):
        return False
    share = overlap(element, quote)
    return share >= QUOTE_SUPPORT and round(share * want) >= min(2, want)


# A bound is not a negation: "no more than 4 g" is "up to 4 g", "not less than" is "at least".
_BOUNDS = {
    "at most": r"\b(?:(?:no|not) (?:more|greater|higher|longer|later) than|not (?:to )?exceed\w*"
    r"|up to|at most|maximum(?: of)?)\b",
    "at least": r"\b(?:(?:no|not) (?:less|fewer|lower|shorter|earlier) than|at least|minimum(?: of)?)\b",
    "more than": r"\b(?:more|greater|higher|longer) than\b",
    "less than": r"\b(?:less|fewer|lower|shorter) than\b",
}
_BOUND = re.compile("|".join(f"(?P<b{i}>{pattern})" for i, pattern in enumerate(_BOUNDS.values())), re.I)


def _as_bounds(text: str) -> str:
    """`text` with each bound in one wording ("no more than" → "at most")."""
    names = list(_BOUNDS)
    return _BOUND.sub(lambda m: names[int(str(m.lastgroup)[1:])], text)


def _bounds(text: str) -> set[str]:
    return {name for name in _BOUNDS if name in _as_bounds(text).lower()}


def same_negation(quote: str, element: str) -> bool:
    """Does the quote negate what the element negates, and nothing else it states? Clause by clause
    of the element, in the quote's clause holding most of its words, read from the start of the part
    that holds them (after the last "and", "or" before the first: "I have no allergies and take
    metformin" states "take metformin"): each word the two share is read with what comes before it
    (`common.text.negated` up to that word), so "Do not use aspirin" does not state "Use
    aspirin", while a negation after the shared words ("treated with amoxicillin with no adverse
    events") is about something else. Bounds are bounds, not negations ("no more than 4 g" states "up
    to 4 g"); a negated clause whose words the quote lacks is not stated."""
    quote_clauses = [words(c) for c in clauses(_as_bounds(quote))]
    for part in clauses(_as_bounds(element)):
        mine = words(part)
        wanted = {stem(w) for w in content_words(mine, skip=STOPWORDS | NEGATIONS, numbers=True)}
        theirs = max(quote_clauses, key=lambda c: len(wanted & {stem(w) for w in c}), default=[])
        theirs = theirs[_part_start(theirs, [stem(w) for w in mine if stem(w) in wanted]) :]
        shared = [w for w in dict.fromkeys(map(stem, theirs)) if w in wanted]
        if not shared and negated(part):
            return False
        if any(_negated_at(mine, w) != _negated_at(theirs, w) for w in shared):
            return False
    return True


def _negated_at(tokens: list[str], word: str) -> bool:
    """Is the clause `tokens` negated where `word` (a stem) first appears, read from its start?"""
    at = next(i for i, token in enumerate(tokens) if stem(token) == word)
    return negated(" ".join(tokens[: at + 1]))


_JOINS = frozenset({"and", "or", "then", "so", "while", "whereas"})


def _part_start(tokens: list[str], wanted: list[str]) -> int:
    """Where the part of a clause that holds the stems `wanted` starts: after the last join before
    the first of them the clause holds, in their own order (the clause's start when there is none)."""
    first = next((tokens.index(t) for w in wanted for t in tokens if stem(t) == w), 0)
    return max((i + 1 for i in range(first) if tokens[i] in _JOINS), default=0)


def advice_source(doc: Doc) -> str:
    return "\n\n".join(advice_texts(doc))


def audit_messages(
    source: str, elements: list[tuple[int, str]], pack: DomainPack | None = None
) -> list[Message]:
    blocks = [data_block("source", source)]
    blocks.extend(data_block("element", text, i=index) for index, text in elements)
    user = "\n\n".join(blocks)
    return [{"role": "system", "content": audit_prompt(pack)}, {"role": "user", "content": user}]


class Controller:
    """Verifies grounding; `llm` (optional) audits the elements fuzzy matching missed."""

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        min_score: float = DEFAULT_MIN_SCORE,
        pack: DomainPack | None = None,
    ) -> None:
        self.llm = llm
        self.min_score = min_score
        self.pack = pack or medical()
        self.prompt = audit_prompt(self.pack)

    def groups(self, case: Case, doc: Doc) -> list[tuple[str, list[tuple[str, str]]]]:
        """(source, [(field, element)]) pairs: the narrative against `narrative_source`, the advice
        against `advice_source`."""
        narrative = narrative_source(doc, diagnostic=is_diagnostic(case, self.pack))
        return [
            (narrative, [(f, text) for f, text in case.narrative.entities()]),
            (advice_source(doc), [("advice", text) for text in case.advice]),
        ]

    def requests(self, case: Case, doc: Doc) -> list[list[Message]]:
        """The LLM audit's messages for the case, group by group, as `audit` sends them: only the
        elements the fuzzy match missed, against their own source (none when it missed nothing)."""
        found = [(source, self.fuzzy(source, elements)) for source, elements in self.groups(case, doc)]
        return [self._messages(source, spans) for source, spans in found if _missed(spans)]

    def _messages(self, source: str, spans: list[GroundedSpan]) -> list[Message]:
        todo = [(i, s.element) for i, s in enumerate(spans) if s.source_span is None]
        return audit_messages(source, todo, self.pack)

    async def audit(self, case: Case, doc: Doc) -> Case | Rejection:
        spans: list[GroundedSpan] = []
        refused: list[str] = []  # quotes found in the source that do not state their element
        method = "fuzzy"
        for source, elements in self.groups(case, doc):
            found = self.fuzzy(source, elements)
            if self.llm is not None and _missed(found):
                audited = await self.llm_audit(source, found)
                if audited is None:  # the call failed: no verdict, so the document is tried again
                    return reject(doc, "controller_failed", "the grounding audit call failed", stage=STAGE)
                (found, refusals), method = audited, "fuzzy+llm"
                refused += refusals
            spans.extend(found)
        ungrounded = [f"{s.field}: {s.element}" for s in spans if s.source_span is None]
        audit = GroundingAudit(passed=not ungrounded, method=method, spans=spans, ungrounded=ungrounded)
        if ungrounded:
            detail = "; ".join(ungrounded + [f"refused {r}" for r in refused])
            return reject(doc, "ungrounded", detail, stage=STAGE)
        return case.model_copy(update={"grounding": audit, "status": "accepted"})

    def fuzzy(self, source: str, elements: list[tuple[str, str]]) -> list[GroundedSpan]:
        hay = normalise(source)
        return [self._span(field, text, source, hay) for field, text in elements]

    def _span(self, field: str, text: str, source: str, hay: Normalised) -> GroundedSpan:
        match = locate(text, source, hay)
        grounded = match.score >= self.min_score and match.span is not None
        return GroundedSpan(
            element=text,
            field=field,
            source_span=match.span if grounded else None,
            start=match.start if grounded else None,
            end=match.end if grounded else None,
            score=round(match.score, 2),
        )

    async def llm_audit(
        self, source: str, spans: list[GroundedSpan]
    ) -> tuple[list[GroundedSpan], list[str]] | None:
        """`spans` with the ones the model grounds by a verified quote filled in, and the quotes refused
        (found, but not stating their element); None if the call failed."""
        assert self.llm is not None
        result = await self.llm.structured(
            self._messages(source, spans), AuditOutput, Settings(temperature=0)
        )
        if result.value is None:
            return None
        hay = normalise(source)
        updated = list(spans)
        refused: list[str] = []
        for verdict in result.value.elements:
            if verdict.grounded and verdict.quote.strip() and 0 <= verdict.index < len(spans):
                span = updated[verdict.index]
                quoted = self._span(span.field, verdict.quote, source, hay)
                if quoted.source_span is None or span.source_span is not None:
                    continue
                if states(quoted.source_span, span.element):  # the source's words, not the model's
                    updated[verdict.index] = quoted.model_copy(update={"element": span.element})
                else:
                    refused.append(f"{span.field}: quote {verdict.quote[:80]!r} does not state it")
        return updated, refused


def _missed(spans: list[GroundedSpan]) -> bool:
    return any(s.source_span is None for s in spans)
