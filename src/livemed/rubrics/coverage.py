"""The fact-coverage audit: does the candidate see every patient fact a rubric criterion rests on?

A criterion's *context* is the facts about the patient it names or presupposes: after "given",
"despite", "because of", "in view of", "considering", "due to", "especially with" ("given their family
history of heart disease"); a possessive ("their kidney disease", "the patient's penicillin allergy");
the object of a verb that presupposes a habit or a treatment ("cutting back on caffeine", "stopping
ibuprofen", "continuing metformin"), though cutting down on a list of things ("caffeine, alcohol and
spicy food") is the generic advice on triggers and presupposes none of them unless they are the
patient's ("your coffee"); the patient a negative criterion names ("to a patient allergic
to penicillin"). None inside a condition, a question or a negation counts ("if he feels unwell
despite antibiotics", "how long to continue", "no need to stop eating"). A bare definite reference
("the palpitations") is not read as context: it usually names the complaint in the clinician's
words, which no word match can hold against the patient's.

Each fact is checked against the candidate's view (`curate.view.audit_text`, the one definition the
answer stage sends and the leak audit reads) by words: the fact's content words, folded and stemmed
as `offline/lexical` folds them (`common.text.key`), each seen when the view has it, a word
sharing its first letters (≥ 4: "smoking" ~ "smoke"), or a word of its group in the domain pack's
`[coverage] equivalents` ("caffeine" ~ "coffee"). A fact is seen when at least half its words are,
and every word of it that names a kind of fact (a word of an `equivalents` group: "family").
Words common to every statement ("doctor", "symptoms", `common.word_tables.GENERIC`) and amounts ("a
lot", "one or two") are not facts. A criterion resting on an unseen fact is dropped by the rubric
writer (`keep_seen`), with a finding `unseen_fact` naming the fact; `coverage(case, rubric, pack)`
audits a stored rubric, `restates` tells an advice fact that only restates the view (step 1).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from livemed.common.text import content_words, key
from livemed.common.word_tables import BOILERPLATE, GENERIC, STOPWORDS
from livemed.curate.view import audit_text
from livemed.domains import DomainPack, medical
from livemed.records import Case, FactCoverage, Rubric
from livemed.rubrics.check import DraftCriterion

SEEN_SHARE = 0.5  # a fact is seen when at least this share of its words are in the view
RESTATED_SHARE, RESTATED_MIN = 0.8, 3  # an advice fact whose words the view holds this much restates it
PREFIX = 4  # two words with the same first letters (at least this many) count as one

_OWNER = r"(?:their|the patient's|the person's|the patient’s|the person’s|his|her|your)"
_ANCHORED = re.compile(
    r"\b(?:given|despite|because of|in view of|considering|due to|in light of|especially with"
    r"|especially since|with " + _OWNER + r")\s+(?P<fact>[^,;:.()]+)",
    re.IGNORECASE,
)
_FACT_HEAD = (
    r"(?:family history|history|allerg(?:y|ies)|disease|intake|consumption|habits?|pregnancy|diagnosis"
    r"|diabetes|asthma|smoking|drinking|alcohol|caffeine|coffee|diet|job|work|risk factors?)"
)
_POSSESSIVE = re.compile(
    rf"\b{_OWNER}\s+(?P<fact>(?:[\w'-]+\s+){{0,2}}?{_FACT_HEAD}\b(?:\s+of\s+[^,;:.()]+)?)", re.IGNORECASE
)
_PRESUPPOSED = re.compile(
    r"\b(?:(?P<cut>cut(?:s|ting)? (?:back|down)(?: on| to)?)|stop(?:s|ping)?|quit(?:s|ting)?"
    r"|switch(?:es|ing)? from)\s+(?P<owner>{_OWNER}\s+)?(?P<fact>[^,;:.()]+)",
    re.IGNORECASE,
)
# Cutting down on a list of things ("caffeine, alcohol and spicy food") is the generic advice on
# triggers, not a claim that the patient has each habit: "cut down on caffeine" presupposes the
# patient's coffee when caffeine is the one thing named, or when it is theirs ("your coffee").
_ITEMS = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
GENERIC_LIST = 2  # items from which a list of things to cut down on is generic advice
# going on with a treatment: the patient's own ("continuing metformin"), or one the advice itself starts
# ("recommend oral iron … continue iron for three months"), so an advice element that names it without
# going on with it counts as its source too
_CONTINUED = re.compile(
    r"\b(?:continu(?:e|es|ing)|keep(?:s|ing)? taking)\s+(?:{_OWNER}\s+)?(?P<fact>[^,;:.()]+)",
    re.IGNORECASE,
)
# what makes a match no claim about the patient: a condition or a question before it in its clause
# ("if he feels unwell despite antibiotics", "how long to continue"), a negation ("no need to stop
# eating"), a pronoun or an adverb for its object ("stop it progressing", "stopping suddenly")
_NOT_A_CLAIM = re.compile(
    r"\b(?:if|when|unless|once|whether|how long|no need|not|never|don't|do not|without)\b[^;:.]*$",
    re.IGNORECASE,
)
_NOT_AN_OBJECT = re.compile(r"^(?:it|them|this|that|these|those|\w+ly)\b", re.IGNORECASE)
_NAMED_PATIENT = re.compile(
    r"\b(?:a|the|this) (?:patient|person)(?: who (?:is|has|takes))? (?:allergic to|taking|on|with)"
    r"\s+(?P<fact>[^,;:.()]+)",
    re.IGNORECASE,
)
# where a fact's phrase ends: a word that starts another clause or part of the sentence
_END = re.compile(
    r"\s+(?:to|if|when|while|because|as|which|that|who|for|so|but|since|until|before|after|unless|or"
    r"|is|are|was|were|may|can|could|should|will|would|might|must|does|do|even|rather|instead|without"
    r"|before|by|in case)\b.*$",
    re.IGNORECASE,
)
_NOT_FACTS_TEXT = (  # amounts and words about care itself, not about the patient
    """
    lot lots bit amount much many more less one two three four five six seven eight nine ten few couple
    own concern concerns question questions situation body care options option problem problems doctor gp
    pharmacist nurse clinician team specialist appointment life risk chance recurrence normal usual
    activities activity the a an of in on at with and or their his her your my day week
    disease diseases history condition conditions illness disorder
    """  # the last line: heads that say which fact only with their qualifier ("liver" disease)
)
_NOT_FACTS = frozenset(_NOT_FACTS_TEXT.split())


@dataclass(frozen=True)
class CoverageResult:
    """The audit of one rubric: how many criteria, how many rest on patient facts, and which of those
    facts the candidate's view does not hold (criterion index, fact)."""

    criteria: int
    with_context: int
    unseen: list[tuple[int, str]] = field(default_factory=list)
    dropped: int = 0  # criteria the rubric writer dropped for an unseen fact before this audit

    @property
    def visible(self) -> int:
        """Criteria whose every context fact the candidate sees (those with no context included)."""
        return self.criteria - len({i for i, _ in self.unseen})

    def record(self) -> FactCoverage:
        """What the rubric stores of the audit (its criteria, those naming patient facts, those dropped)."""
        return FactCoverage(criteria=self.criteria, with_context=self.with_context, dropped=self.dropped)


def context_facts(criterion: str) -> list[str]:
    """The patient facts a criterion names or presupposes, as phrases, in text order (a treatment it
    continues among them: `continued_facts`)."""
    return _facts(
        criterion,
        (
            (_ANCHORED, True),
            (_NAMED_PATIENT, True),
            (_POSSESSIVE, False),
            (_PRESUPPOSED, False),
            (_CONTINUED, False),
        ),
    )


def continued_facts(criterion: str) -> list[str]:
    """The treatments a criterion goes on with ("continue iron"): seen when the view or advice has them."""
    return _facts(criterion, ((_CONTINUED, False),))


def _facts(criterion: str, patterns: tuple[tuple[re.Pattern[str], bool], ...]) -> list[str]:
    found: list[tuple[int, str]] = []
    for pattern, split in patterns:
        for match in pattern.finditer(criterion):
            if _NOT_A_CLAIM.search(criterion[: match.start()]) or _NOT_AN_OBJECT.match(match.group("fact")):
                continue
            if _generic_list(match, criterion):
                continue
            phrase = _END.sub("", match.group("fact")).strip()
            phrase = re.sub(rf"^{_OWNER}\s+", "", phrase, flags=re.IGNORECASE)
            parts = re.split(r"\s+and\s+", phrase)
            for part in parts if split else parts[:1]:
                if fact_words(part):
                    found.append((match.start("fact"), part.strip()))
    facts: list[str] = []
    for _, fact in sorted(found):
        if not any(fact.lower() in f.lower() or f.lower() in fact.lower() for f in facts):
            facts.append(fact)
    return facts


def _generic_list(match: re.Match[str], criterion: str) -> bool:
    """Is this "cut down on" a list of things not said to be the patient's (`GENERIC_LIST` or more,
    a new verb such as "and avoiding energy drinks" not an item)?"""
    cut = match.groupdict().get("cut")
    if not cut or cut.lower().endswith(" to") or match.group("owner"):  # "cut down to two cups": an amount
        return False
    clause = re.split(r"[;:.()]", criterion[match.start("fact") :], maxsplit=1)[0]
    clause = _END.sub("", re.sub(r"\s+or\s+", " and ", clause))
    items = [item for item in _ITEMS.split(clause) if fact_words(item) and not re.match(r"\w+ing\b", item)]
    return len(items) >= GENERIC_LIST


def fact_words(fact: str) -> set[str]:
    """A fact's content words as keys (`common.text.key`), generic words and amounts left out."""
    words = content_words(re.findall(r"[a-z][a-z'\-]+", fact.lower()), skip=_SKIP)
    return {key(w) for w in words if key(w) not in _NOT_KEYS}


_SKIP = _NOT_FACTS | GENERIC | STOPWORDS | BOILERPLATE
_NOT_KEYS = frozenset(key(w) for w in _NOT_FACTS)


def view_words(text: str) -> frozenset[str]:
    return frozenset(key(w) for w in re.findall(r"[a-z][a-z'\-]+", text.lower()))


@functools.cache
def _groups(pack: DomainPack) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(key(w.lower()) for w in group) for group in pack.coverage.equivalents)


def seen(fact: str, view: frozenset[str], pack: DomainPack | None = None) -> bool:
    """Whether the view holds the fact: at least `SEEN_SHARE` of its words, each by itself, a word with
    the same first letters, or a word of its group; and every word that names a kind of fact (a word of
    an `equivalents` group: "family", "caffeine", "smoking") among them, so "family history of heart
    disease" is not seen in "my medical history … no heart problems"."""
    wanted = fact_words(fact)
    if not wanted:
        return True
    groups = _groups(pack or medical())
    found = {word for word in wanted if _word_seen(word, view, groups)}
    kinds = {word for word in wanted if any(word in group for group in groups)}
    return kinds <= found and len(found) / len(wanted) >= SEEN_SHARE


def _word_seen(word: str, view: frozenset[str], groups: tuple[frozenset[str], ...]) -> bool:
    if word in view:
        return True
    if len(word) >= PREFIX and any(
        len(v) >= PREFIX and (v.startswith(word) or word.startswith(v)) for v in view
    ):
        return True
    return any(word in group and group & view for group in groups)


def restates(fact: str, case: Case, pack: DomainPack | None = None) -> bool:
    """Whether an advice fact only restates what the candidate's view already says: at least
    `RESTATED_SHARE` of its words (and `RESTATED_MIN` of them), each word itself in the view."""
    wanted = fact_words(fact)
    view = view_words(audit_text(case, pack))
    return len(wanted) >= RESTATED_MIN and len(wanted & view) / len(wanted) >= RESTATED_SHARE


def without_restated(
    case: Case, facts: Sequence[str], pack: DomainPack | None = None
) -> tuple[list[int], list[int]]:
    """The indices of `facts` kept, and of those dropped because they only restate the view."""
    restated = [i for i, fact in enumerate(facts) if restates(fact, case, pack)]
    return [i for i in range(len(facts)) if i not in restated], restated


def criteria_coverage(case: Case, texts: Sequence[str], pack: DomainPack | None = None) -> CoverageResult:
    """The audit of criteria `texts` against `case`'s candidate view."""
    view = view_words(audit_text(case, pack))
    advised = view | view_words(" ".join(e for e in case.advice if not continued_facts(e)))
    with_context = 0
    unseen: list[tuple[int, str]] = []
    for index, text in enumerate(texts):
        facts, continued = context_facts(text), continued_facts(text)
        with_context += bool(facts)
        unseen.extend(
            (index, fact) for fact in facts if not seen(fact, advised if fact in continued else view, pack)
        )
    return CoverageResult(criteria=len(texts), with_context=with_context, unseen=unseen)


def coverage(case: Case, rubric: Rubric, pack: DomainPack | None = None) -> CoverageResult:
    """The audit of a stored rubric: which of its criteria rest on a fact the candidate never sees."""
    return criteria_coverage(case, [c.text for c in rubric.criteria], pack)


@dataclass(frozen=True)
class Dropped:
    """A criterion the audit dropped: what it was, and the finding that says why."""

    draft: DraftCriterion
    facts: list[str]

    @property
    def finding(self) -> str:
        text = f"{self.draft.text!r:.160}"
        if not self.facts:  # a negative that went with its advice element's positives
            return f"unseen_fact: dropped {text}: its advice element's positive criteria rest on unseen facts"
        facts = ", ".join(repr(f) for f in self.facts)
        return f"unseen_fact: dropped {text}: it rests on {facts}, which the candidate never sees"


def keep_seen(
    case: Case, drafts: list[DraftCriterion], pack: DomainPack | None = None
) -> tuple[list[DraftCriterion], CoverageResult, list[Dropped]]:
    """The drafts without the criteria resting on an unseen fact, the audit of the drafts given, and
    the criteria dropped."""
    result = criteria_coverage(case, [d.text for d in drafts], pack)
    facts: dict[int, list[str]] = {}
    for index, fact in result.unseen:
        facts.setdefault(index, []).append(fact)
    dropped = [Dropped(drafts[i], found) for i, found in facts.items()]
    kept = [d for i, d in enumerate(drafts) if i not in facts]
    orphans = _orphaned(dropped, kept)  # an advice element left with negatives only goes with its positives
    dropped += [Dropped(d, []) for d in orphans]
    kept = [d for d in kept if not any(d is o for o in orphans)]
    with_context = result.with_context - len(facts)
    return kept, CoverageResult(len(kept), with_context, [], len(dropped)), dropped


def _orphaned(dropped: Sequence[Dropped], kept: Sequence[DraftCriterion]) -> list[DraftCriterion]:
    """The kept negatives of an advice element whose every positive criterion was dropped (a wrong-value
    negative names the value of a positive that is gone)."""
    gone = unseen_advice(dropped, kept)
    return [d for d in kept if d.polarity == "negative" and d.advice_index in gone]


def unseen_advice(dropped: Sequence[Dropped], kept: Sequence[DraftCriterion]) -> set[int]:
    """The advice elements whose every criterion was dropped (they rest on facts the candidate never
    sees, so the rubric need not cover them)."""
    covered = {d.advice_index for d in kept if d.polarity == "positive"}
    return {d.draft.advice_index for d in dropped if d.draft.advice_index is not None} - covered


def run_summary(pairs: Sequence[tuple[Case, Rubric]], pack: DomainPack | None = None) -> str:
    """One line for a run's rubrics: criteria resting only on seen facts, and criteria dropped."""
    results = [coverage(case, rubric, pack) for case, rubric in pairs]
    total = sum(r.criteria for r in results)
    visible = sum(r.visible for r in results)
    dropped = sum(rubric.fact_coverage.dropped for _, rubric in pairs if rubric.fact_coverage)
    share = f"{visible / total:.0%}" if total else "-"
    return (
        f"fact coverage: {visible}/{total} criteria ({share}) rest only on facts the candidate sees; "
        f"{dropped} dropped for an unseen fact in {len(pairs)} rubric(s)"
    )
