"""What the offline Screener may build a narrative from: a text's sections and sentences, with the
material that would give the answer away set aside.

A case report's management, treatment, outcome, follow-up, discussion and "learning points" sections
never reach the narrative (management and treatment are where the advice comes from); nor does any
sentence, in any text, that reads like advice (an imperative, "we recommend", "you should", "should be
treated with") or, in a report, like the outcome ("the rash faded", "she continued apixaban"). A
section starts with a heading: a paragraph that opens with "Heading:" or a line that is only a heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
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
    return text if text in HELD_BACK or text in {"case presentation", "investigations"} else None


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


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
        if label and label.group(1).strip().lower() in HELD_BACK | {"case presentation", "investigations"}:
            heading = label.group(1).strip().lower()
            line = line[label.end() :]
        found.append(Section(heading, split_sentences(line)))
    return found


def advice_like(sentence: str) -> bool:
    """A sentence that tells someone what to do ("Take…", "we recommend…", "you should…")."""
    return ADVICE_LIKE.search(sentence) is not None


def outcome_like(sentence: str) -> bool:
    """A report sentence about what happened after treatment ("the rash faded", "she continued apixaban")."""
    return OUTCOME_LIKE.search(sentence) is not None


def narrative_sentences(text: str, *, report: bool) -> list[tuple[str | None, str]]:
    """(heading, sentence) pairs a narrative may use: held-back sections and advice-like (and, in a
    report, outcome-like) sentences left out."""
    kept: list[tuple[str | None, str]] = []
    for section in sections(text):
        if section.heading in HELD_BACK:
            continue
        for sentence in section.sentences:
            if advice_like(sentence) or (report and outcome_like(sentence)):
                continue
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
