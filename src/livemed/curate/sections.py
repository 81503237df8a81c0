"""What the offline Screener may build a narrative from: a text's sections and sentences, with the
material that would give the answer away set aside.

A case report's management, treatment, outcome, follow-up, discussion and "learning points" sections
never reach the narrative (management and treatment are where the advice comes from); nor does any
sentence, in any text, that reads like advice (an imperative, "we recommend", "you should", "should be
treated with") or, in a report, like the outcome ("the rash faded", "she continued apixaban"). A
section starts with a heading: a paragraph that opens with "Heading:" or a line that is only a heading.

A case whose question is diagnostic (`is_diagnostic`) gives away more: the title, the abstract and the
introduction (`FRONT_MATTER`) usually name the diagnosis, so they are not narrative sources, and nor
is any sentence that states the diagnosis (`reveals_diagnosis`: "biopsy confirmed…", "consistent
with…", "was diagnosed with…", "…is a clinical diagnosis", and the domain pack's `[leak]
outcome_patterns`); a past diagnosis in the history ("diagnosed with diabetes in 2010") goes with
them. The labelled paragraphs of a structured abstract ("Case presentation: …") stay in the abstract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from livemed.common.text import sentences
from livemed.domains import DomainPack, medical
from livemed.records import Case

_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z /&'-]{1,40}?)\s*:\s*")

ADVICE_HEADINGS = frozenset(
    {
        "management",
        "treatment",
        "therapy",
        "recommendation",
        "recommendations",
        "plan",
        "advice",
        "management plan",
        "treatment plan",
        "management and treatment",
        "treatment and management",
    }
)
OUTCOME_HEADINGS = frozenset(
    {
        "outcome",
        "outcomes",
        "outcome and follow-up",
        "outcome and follow up",
        "follow-up",
        "follow up",
        "follow-up and outcomes",
        "clinical course",
        "course",
        "hospital course",
        "prognosis",
        "discussion",
        "learning points",
        "learning point",
        "teaching points",
        "key points",
        "key messages",
        "take-home messages",
        "take home messages",
        "take-home message",
        "lessons",
        "conclusion",
        "conclusions",
        "patient perspective",
    }
)
QUESTION_HEADINGS = frozenset({"question", "clinical question", "the question"})
HELD_BACK = ADVICE_HEADINGS | OUTCOME_HEADINGS | QUESTION_HEADINGS
FRONT_MATTER = frozenset({"abstract", "summary", "introduction", "background"})
_KNOWN = HELD_BACK | FRONT_MATTER | {"case presentation", "investigations"}
# The built-in sentences that state a diagnosis (the domain pack adds its own `[leak] outcome_patterns`).
DIAGNOSIS_STATED = re.compile(
    r"\b(?:confirm(?:ed|s|ing)|consistent with|diagnos(?:ed|is)|revealed|reveals"
    r"|(?:final|definitive|established|eventual|ultimate|definite) diagnosis)\b",
    re.IGNORECASE,
)

_IMPERATIVE = (
    r"take|avoid|use|apply|stop|start|seek|see|keep|drink|rest|offer|advise|review|repeat|recheck|refer"
    r"|treat|mark|protect|prevent|wear|diagnose|warn|explain|continue|consider|prescribe|give|arrange"
    r"|check|monitor|call|report|return|try|never|ensure|limit|reduce|increase|cut|elevate|wash|eat"
    r"|follow|schedule|book|contact|ask|tell|encourage|discuss|remove|raise|put|get|go|make sure|please"
    r"|do not|don't|don’t|be sure|remember|switch|change|lose|quit|walk|sleep|cover|clean|book"
)
ADVICE_LIKE = re.compile(
    rf"^\s*(?:(?:{_IMPERATIVE})\b)"
    r"|\b(?:we|i) (?:would |'d )?(?:recommend|suggest|advise)\w*"
    r"|\byou (?:should|need to|must|may want to|might want to|ought to)\b"
    r"|\b(?:should|must) be (?:treated|managed|given|started|referred|prescribed|offered)\b"
    r"|\b(?:is|are) (?:usually |often |best |typically )?(?:treated|managed) with\b"
    r"|\b(?:treatment of choice|first-line treatment|is recommended|are recommended)\b",
    re.IGNORECASE,
)
OUTCOME_LIKE = re.compile(
    r"\b(?:outcome|at follow-?up|on follow-?up|follow-up (?:at|after|visit)|(?:was|were) discharged"
    r"|resolved|recovered|improved|settled|receded|faded|remained (?:well|asymptomatic|symptom-free)"
    r"|continued (?:to take |taking |on )?\w+|(?:was|were) (?:managed|treated|started|given|prescribed"
    r"|switched|referred|commenced|admitted)|responded to|after (?:starting|treatment|\w+ weeks of)"
    r"|learning points?|in conclusion|we report|this case (?:shows|highlights|illustrates))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Section:
    heading: str | None  # lower-case, or None before the first heading
    sentences: list[str]


def _heading_line(line: str) -> str | None:
    """A line that is only a heading ("Discussion", "Learning points"), lower-cased."""
    text = line.strip().rstrip(":").strip().lower()
    return text if text in _KNOWN else None


def sections(text: str) -> list[Section]:
    """The text's paragraphs grouped by heading, each paragraph's leading "Heading:" label removed."""
    found: list[Section] = []
    current: str | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if (standalone := _heading_line(line)) is not None:
            current = standalone
            continue
        label = _LABEL.match(line)
        heading = current
        if label and (name := label.group(1).strip().lower()) in _KNOWN:
            # a structured abstract's "Case presentation:" stays in the abstract; "Discussion:" is held back
            heading = current if current in FRONT_MATTER and name not in HELD_BACK else name
            line = line[label.end() :]
        found.append(Section(heading, sentences(line)))  # a line: no line break inside
    return found


def advice_like(sentence: str) -> bool:
    """A sentence that tells someone what to do ("Take…", "we recommend…", "you should…")."""
    return ADVICE_LIKE.search(sentence) is not None


def outcome_like(sentence: str) -> bool:
    """A report sentence about what happened after treatment ("the rash faded", "she continued apixaban")."""
    return OUTCOME_LIKE.search(sentence) is not None


def reveals_diagnosis(sentence: str, pack: DomainPack | None = None) -> bool:
    """A sentence that states the diagnosis (`DIAGNOSIS_STATED`, the pack's `[leak] outcome_patterns`)."""
    own = (pack or medical()).outcome_pattern
    return DIAGNOSIS_STATED.search(sentence) is not None or (
        own is not None and own.search(sentence) is not None
    )


def before_diagnosis(sentence: str, pack: DomainPack | None = None) -> str | None:
    """The sentence without its trailing clause that reads the results as the diagnosis ("Haemoglobin
    was 92 g/L and ferritin 6 micrograms/L, consistent with iron deficiency anaemia" → "Haemoglobin was
    92 g/L and ferritin 6 micrograms/L"): the results known at the decision point stay, their reading
    goes. The sentence itself when it states no diagnosis; None when the diagnosis is what the sentence
    says ("Biopsy confirmed cutaneous sarcoidosis"), so nothing of it is kept."""
    own = (pack or medical()).outcome_pattern
    starts = [m.start() for m in (DIAGNOSIS_STATED.search(sentence), own and own.search(sentence)) if m]
    if not starts:
        return sentence
    head = sentence[: min(starts)]
    cut = max(head.rfind(","), head.rfind(";"), head.rfind(" – "), head.rfind(" — "))
    kept = head[:cut].strip() if cut > 0 else ""
    return kept if len(kept.split()) >= MIN_KEPT_WORDS and not reveals_diagnosis(kept, pack) else None


MIN_KEPT_WORDS = 4  # a shorter head ("On biopsy,") says nothing without its diagnosis


def diagnostic_query(query: str, pack: DomainPack | None = None) -> bool:
    """Does the query ask for a diagnosis (the pack's `diagnosis` query cues, `[offline.query_cues]`)?"""
    cue = (pack or medical()).offline.query_cues.get("diagnosis")
    return cue is not None and re.search(cue, query, re.IGNORECASE) is not None


def is_diagnostic(case: Case, pack: DomainPack | None = None) -> bool:
    """A case whose answer is a diagnosis: the Validator typed its query "diagnosis", or the query asks
    for one (`diagnostic_query`)."""
    typed = case.validation.query_type if case.validation is not None else None
    return typed == "diagnosis" or diagnostic_query(case.query, pack)


def narrative_sentences(
    text: str, *, report: bool, diagnostic: bool = False, pack: DomainPack | None = None
) -> list[tuple[str | None, str]]:
    """(heading, sentence) pairs a narrative may use: held-back sections and advice-like (and, in a
    report, outcome-like) sentences left out; for a `diagnostic` report also its front matter, the
    sentences that state the diagnosis, and the clauses that read results as it (`before_diagnosis`)."""
    kept: list[tuple[str | None, str]] = []
    for section in sections(text):
        if section.heading in HELD_BACK or (diagnostic and section.heading in FRONT_MATTER):
            continue
        for sentence in section.sentences:
            if advice_like(sentence) or (report and outcome_like(sentence)):
                continue
            if diagnostic and (cut := before_diagnosis(sentence, pack)) != sentence:
                if cut is None:
                    continue
                sentence = cut
            kept.append((section.heading, sentence))
    return kept


def report_advice(text: str) -> list[str]:
    """The sentences of a report's management and treatment sections (no questions)."""
    return [
        s
        for section in sections(text)
        if section.heading in ADVICE_HEADINGS
        for s in section.sentences
        if not s.rstrip().endswith("?")
    ]
