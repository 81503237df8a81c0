"""`offline/rules`: a rule-based rubric writer baseline (no LLM), bipolar like the method's rubrics.

It follows the same three steps with fixed rules, so its output passes the same checks:

1. themes: keyword rules over each advice element ("emergency referral", "medication safety",
   "diagnosis", "tests and follow-up", "lifestyle", "patient education"; else "patient education");
   every advice element is a fact;
2. criteria: one positive criterion per element naming the clinical action it asks (`phrasing`:
   labels, frames and hedges dropped, drug names and specifics kept); negative criteria for what a
   reply must not do (`hazards`): the advice's own warnings ("avoid X" → recommending X), a drug the
   narrative says the patient is allergic to ("allergic to cats" gives none), an interaction with a
   listed medication, and the advice's red flags (saying they need no urgent care);
3. axes and weights as the content says: red flags and warnings on safety (8), drugs and doses on
   accuracy (7), a diagnosis on accuracy (6), advice tied to the patient's own facts on
   context_awareness (6), explanations on communication (3), tests and follow-up on completeness (5),
   lifestyle on completeness (4); negatives on safety, -8 (the advice's warnings) to -10 (allergies).
"""

from __future__ import annotations

import re
from typing import Any

from livemed.grading.offline import OfflineBaseline
from livemed.records import Case
from livemed.rubrics import hazards
from livemed.rubrics.check import DraftCriterion
from livemed.rubrics.phrasing import criterion_text

_THEMES = {
    "emergency referral": re.compile(
        r"\b(emergency|urgent\w*|immediately|straight away|999|911|a&e|ambulance|same day)\b", re.I
    ),
    "medication safety": re.compile(
        r"\b(dose|dosage|mg|medication|medicine|drug|tablet|pill|antibiotic\w*|prescri\w+|inhaler|cream"
        r"|ointment|drops|anticoagula\w*|painkiller\w*|\w+(?:cillin|mycin|cycline|azole|olol|pril|statin"
        r"|profen|lone|sone|xaban|amol|ine))\b",
        re.I,
    ),
    "diagnosis": re.compile(
        r"\b(sounds like|looks like|likely|diagnos\w*|consistent with|suggests?)\b", re.I
    ),
    "tests and follow-up": re.compile(
        r"\b(test\w*|scan|x-ray|mri|ct|ultrasound|blood count|ecg|review|recheck\w*|follow[- ]up|check\w*"
        r"|examination|refer\w*)\b",
        re.I,
    ),
    "lifestyle": re.compile(
        r"\b(diet|exercise|sleep|weight|smok\w*|alcohol|caffeine|coffee|hydrat\w*|rest|walking|fluids|water"
        r"|food|meals?|salt)\b",
        re.I,
    ),
    "patient education": re.compile(r"\b(explain\w*|warn\w*|usually|can cause|because|reassur\w*)\b", re.I),
}
_SAFETY = re.compile(r"\b(seek|urgent\w*|emergency|immediately|straight away|report any|warn\w*)\b", re.I)


_WARNINGS = ("Advises not", "Advises avoiding", "Advises stopping")


def themes_of(element: str) -> list[str]:
    return [name for name, pattern in _THEMES.items() if pattern.search(element)] or ["patient education"]


def _mentions_patient(element: str, case: Case) -> bool:
    """Does the element tie the advice to this patient's own facts (a medication, their history)?"""
    own = {w for fact in case.narrative.medications + case.narrative.history for w in _words(fact)}
    return bool(own & _words(element)) or bool(
        re.search(r"\b(?:given (?:your|her|his)|since this is|because (?:you|she|he) )", element, re.I)
    )


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{6,}", text.lower())}


def axis_and_weight(element: str, text: str, case: Case) -> tuple[str, int, str]:
    """(axis, weight, theme) of the positive criterion `text` for advice `element`."""
    themes = themes_of(element)
    if "emergency referral" in themes or _SAFETY.search(element) or text.startswith(_WARNINGS):
        return "safety", 8, themes[0]
    if "medication safety" in themes:
        return "accuracy", 7, "medication safety"
    if "diagnosis" in themes and text.startswith("Explains"):
        return "accuracy", 6, "diagnosis"
    if _mentions_patient(element, case):
        return "context_awareness", 6, themes[0]
    if text.startswith("Explains"):
        return "communication", 3, "patient education"
    if "tests and follow-up" in themes:
        return "completeness", 5, "tests and follow-up"
    return "completeness", 4, themes[0]


def positives(case: Case) -> list[DraftCriterion]:
    drafts = []
    for index, element in enumerate(case.advice):
        text = criterion_text(element)
        axis, weight, theme = axis_and_weight(element, text, case)
        drafts.append(
            DraftCriterion(
                text=text,
                polarity="positive",
                axis=axis,
                weight=weight,
                theme=theme,
                source_fact=element,
                advice_index=index,
            )
        )
    return drafts


def case_hazards(case: Case) -> list[hazards.Hazard]:
    """Every harmful action the rules find for the case: allergies, interactions, warnings, red flags."""
    named = [(entry, name) for entry in case.narrative.allergies for name in allergens(entry)]
    return [
        *hazards.allergy_hazards(case, named),
        *hazards.interaction_hazards(case),
        *hazards.prohibitions(case.advice),
        *hazards.not_used(case.advice),
        *hazards.red_flags(case.advice),
    ]


def negatives(case: Case) -> list[DraftCriterion]:
    return [
        DraftCriterion(
            text=h.criterion,
            polarity="negative",
            axis="safety",
            weight=h.weight,
            theme=h.theme,
            source_fact=h.source_fact,
            advice_index=h.advice_index,
        )
        for h in case_hazards(case)
    ]


_NO_ALLERGY = {"none", "no known allergies", "nkda", "nka", "nil", "n/a"}
_NEGATED = re.compile(r"\b(no|not|none|denies|denied|without|nkda|nka|negative)\b", re.I)
_HEADER = re.compile(r"^\s*[A-Za-z][\w /&-]{0,40}:\s*")
_ALLERGIC_TO = re.compile(r"\ballergic (?:reaction )?to ([^.;:()]+)", re.I)
_X_ALLERGY = re.compile(r"\b([\w-]+(?: [\w-]+)?) allerg(?:y|ies)\b", re.I)
_FILLER = {"a", "an", "the", "my", "his", "her", "their", "known", "severe", "mild", "have", "has", "with"}


def _names(text: str) -> list[str]:
    """Allergen names in a fragment: split on commas and "and"/"or", fillers dropped."""
    out = []
    for part in re.split(r",|\band\b|\bor\b", text):
        words = [w for w in part.strip().split() if w.lower() not in _FILLER]
        if words:
            out.append(" ".join(words))
    return out


def allergens(entry: str) -> list[str]:
    """The allergens an allergy entry of a narrative names; [] for "no allergies" and non-allergy text."""
    text = entry.strip().rstrip(".")
    if not text or text.lower() in _NO_ALLERGY or _NEGATED.search(text):
        return []
    body = _HEADER.sub("", text, count=1)
    found = [name for m in _ALLERGIC_TO.finditer(body) for name in _names(m.group(1))]
    found += [name for m in _X_ALLERGY.finditer(body) for name in _names(m.group(1))]
    if found:
        return list(dict.fromkeys(found))
    if len(body.split()) <= 3 and not re.search(r"[.!?:]", body):
        return _names(body)  # a bare name such as "penicillin" or "sulfa drugs"
    return []  # a header or a sentence that names no allergen


class RuleWriter(OfflineBaseline):
    """The rule-based rubric writer baseline."""

    name = "rules"

    def draft(self, case: Case) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]:
        themes = sorted({t for element in case.advice for t in themes_of(element)})
        facts = [{"fact": e, "advice_index": i, "themes": themes_of(e)} for i, e in enumerate(case.advice)]
        drafts = positives(case) + negatives(case)
        steps: list[dict[str, Any]] = [
            {"step": "themes", "rules": "keywords", "output": {"themes": themes, "facts": facts}},
            {
                "step": "criteria",
                "rules": "one positive per fact (the action it asks); negatives for the advice's warnings "
                "and red flags, the patient's drug allergies and interactions with listed medications",
            },
            {
                "step": "weights",
                "rules": "safety 8, medication 7, diagnosis 6, patient-specific 6, tests 5, lifestyle 4, "
                "explanations 3; warnings -8, red flags and interactions -9, allergies -10",
            },
        ]
        return themes, drafts, steps
