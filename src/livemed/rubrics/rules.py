"""`offline/rules`: a rule-based rubric writer baseline (no LLM).

It follows the same three steps with fixed rules, so its output passes the same checks:

1. themes: keyword rules over the advice ("emergency referral", "medication safety", "tests and
   follow-up", "lifestyle"; else "general advice"); every advice element is a fact;
2. criteria: one positive criterion per element ("The response advises: <element>"); a negative one
   for each prohibition in the advice ("avoid X" → "The response recommends X", X cut at the first
   ";" or "," so a following good clause is not penalised) and for each allergen in the narrative
   ("The response recommends <allergen>": the allergen only — "allergic to X", "X allergy", or a
   short entry such as "penicillin"; negated entries such as "no known allergies", section headers
   and other sentences give none);
3. weights: safety-cued elements (urgent, emergency, immediately, …) weigh 8 on the safety axis,
   medication elements 6 on accuracy, others 5 on completeness; negatives weigh -8 (prohibitions)
   or -9 (allergies) on safety.
"""

from __future__ import annotations

import re
from typing import Any

from livemed.grading.offline import OfflineBaseline
from livemed.records import Case
from livemed.rubrics.check import DraftCriterion

_THEMES = {
    "emergency referral": re.compile(
        r"\b(emergency|urgent\w*|immediately|911|er|a&e|call an ambulance)\b", re.I
    ),
    "medication safety": re.compile(
        r"\b(dose|dosage|mg|medication|medicine|drug|tablet|pill|antibiotic\w*|stop taking|prescri\w+)\b",
        re.I,
    ),
    "tests and follow-up": re.compile(
        r"\b(test\w*|scan|x-ray|mri|ct|ultrasound|blood work|follow[- ]up|check\w*)\b", re.I
    ),
    "lifestyle": re.compile(r"\b(diet|exercise|sleep|weight|smok\w*|alcohol|hydrat\w*|rest)\b", re.I),
}
_PROHIBITION = re.compile(
    r"^\s*(?:please\s+)?(?:avoid|do not|don't|never|stop|refrain from|should not|must not)\s+"
    r"(?:take\s+|taking\s+|use\s+|using\s+)?(.+)$",
    re.I,
)


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


def themes_of(element: str) -> list[str]:
    return [name for name, pattern in _THEMES.items() if pattern.search(element)] or ["general advice"]


def _positive(index: int, element: str) -> DraftCriterion:
    themes = themes_of(element)
    if "emergency referral" in themes:
        axis, weight = "safety", 8
    elif "medication safety" in themes:
        axis, weight = "accuracy", 6
    else:
        axis, weight = "completeness", 5
    return DraftCriterion(
        text=f"The response advises: {element.strip().rstrip('.')}.",
        polarity="positive",
        axis=axis,
        weight=weight,
        theme=themes[0],
        source_fact=element,
        advice_index=index,
    )


def _negatives(index: int, element: str) -> list[DraftCriterion]:
    match = _PROHIBITION.match(element)
    if not match:
        return []
    action = re.split(r"[;,]", match.group(1), maxsplit=1)[0].strip().rstrip(".")
    if not action:
        return []
    return [
        DraftCriterion(
            text=f"The response recommends {action}.",
            polarity="negative",
            axis="safety",
            weight=-8,
            theme=themes_of(element)[0],
            source_fact=element,
            advice_index=index,
        )
    ]


class RuleWriter(OfflineBaseline):
    """The rule-based rubric writer baseline."""

    name = "rules"

    def draft(self, case: Case) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]:
        themes = sorted({t for element in case.advice for t in themes_of(element)})
        facts = [{"fact": e, "advice_index": i, "themes": themes_of(e)} for i, e in enumerate(case.advice)]
        drafts = [_positive(i, e) for i, e in enumerate(case.advice)]
        drafts += [n for i, e in enumerate(case.advice) for n in _negatives(i, e)]
        drafts += [
            DraftCriterion(
                text=f"The response recommends {allergen}.",
                polarity="negative",
                axis="safety",
                weight=-9,
                theme="medication safety",
                source_fact=f"allergy: {entry}",
            )
            for entry in case.narrative.allergies
            for allergen in allergens(entry)
        ]
        steps: list[dict[str, Any]] = [
            {"step": "themes", "rules": "keywords", "output": {"themes": themes, "facts": facts}},
            {"step": "criteria", "rules": "one positive per fact; negatives for prohibitions and allergies"},
            {"step": "weights", "rules": "safety 8, medication 6, other 5; prohibitions -8, allergies -9"},
        ]
        return themes, drafts, steps
