"""`offline/rules`: a rule-based rubric writer baseline (no LLM), bipolar like the method's rubrics.

It follows the same three steps with fixed rules, so its output passes the same checks:

Its words come from the domain pack (`[[themes]]` cues, `[offline]` rules; the medical pack's are
described here):

1. themes: keyword rules over each advice element ("emergency referral", "medication safety",
   "diagnosis", "tests and follow-up", "lifestyle", "patient education"; else "patient education");
   every advice element is a fact;
2. criteria: one positive criterion per element naming the clinical action it asks (`phrasing`:
   labels, frames and hedges dropped, drug names and specifics kept; "at least one of" before a list
   of alternatives, `alternatives`); negative criteria for what a
   reply must not do (`hazards`): the advice's own warnings ("avoid X" → recommending X), a drug the
   narrative says the patient is allergic to ("allergic to cats" gives none), an interaction with a
   listed medication, and the advice's red flags (saying they need no urgent care);
3. axes and weights as the content says: red flags and warnings on safety (8), drugs and doses on
   accuracy (7), a diagnosis on accuracy (6), advice tied to the patient's own facts on
   context_awareness (6), explanations on communication (3), tests and follow-up on completeness (5),
   lifestyle on completeness (4); negatives on safety, -8 (the advice's warnings) to -10 (allergies).
   The legal pack puts deadlines on harm (9) and penalises a missed limitation period (-10).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from livemed.common.text import content_words
from livemed.domains import DomainPack, medical
from livemed.models.base import OfflineBaseline
from livemed.records import Case
from livemed.rubrics import decisive, hazards
from livemed.rubrics.alternatives import AT_LEAST, at_least_one_of
from livemed.rubrics.check import DraftCriterion
from livemed.rubrics.phrasing import criterion_text

_WARNINGS = ("Advises not", "Advises avoiding", "Advises stopping")


def themes_of(element: str, pack: DomainPack | None = None) -> list[str]:
    """The pack's themes whose cues the element has, in the pack's order (else its general theme)."""
    pack = pack or medical()
    found = [name for name, pattern in pack.theme_patterns.items() if pattern.search(element)]
    return found or [pack.offline.general_theme]


def _mentions_patient(element: str, case: Case, pack: DomainPack | None = None) -> bool:
    """Does the element tie the advice to the person's own facts (the pack's `offline.patient_slots`:
    medical a medication or their history; legal their parties, jurisdiction, facts, documents)?"""
    slots = (pack or medical()).offline.patient_slots
    own = {w for name in slots for fact in case.narrative.slot(name) for w in _words(fact)}
    return bool(own & _words(element)) or bool(
        re.search(r"\b(?:given (?:your|her|his)|since this is|because (?:you|she|he) )", element, re.I)
    )


def _words(text: str) -> set[str]:
    """The long words (6 letters or more) that tie advice to the patient's own facts: no stop list."""
    return set(content_words(re.findall(r"[a-z]+", text.lower()), skip=(), shortest=6))


def axis_and_weight(
    element: str, text: str, case: Case, pack: DomainPack | None = None
) -> tuple[str, int, str]:
    """(axis, weight, theme) of the positive criterion `text` for advice `element`: the first of the
    pack's weight rules whose conditions all hold, else its default axis and weight."""
    pack = pack or medical()
    themes = themes_of(element, pack)
    urgent = _urgent(pack)
    holds = {
        "urgent": bool(urgent and urgent.search(element)),
        "warning": text.startswith(_WARNINGS),
        "explains": text.startswith("Explains"),
        "patient": _mentions_patient(element, case, pack),
    }
    for rule in pack.offline.weight_rules:
        if all(holds[c] if c in holds else c.removeprefix("theme:") in themes for c in rule.when):
            return rule.axis, rule.weight, rule.theme or themes[0]
    return pack.offline.default_axis, pack.offline.default_weight, themes[0]


@lru_cache(maxsize=8)
def _urgent(pack: DomainPack) -> re.Pattern[str] | None:
    cues = pack.offline.urgent_cues
    return re.compile(cues, re.IGNORECASE) if cues else None


def positives(case: Case, pack: DomainPack | None = None) -> list[DraftCriterion]:
    drafts = []
    person = (pack or medical()).person
    for index, element in enumerate(case.advice):
        text = at_least_one_of(criterion_text(element, person))
        axis, weight, theme = axis_and_weight(element, text, case, pack)
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


def case_hazards(case: Case, pack: DomainPack | None = None) -> list[hazards.Hazard]:
    """Every harmful action the rules find for the case, by the pack's detectors (medical: allergies,
    interactions, warnings, red flags) and its pattern hazards, each at the pack's weight."""
    pack = pack or medical()
    named = [(entry, name) for entry in case.narrative.allergies for name in allergens(entry)]
    detectors = {
        "allergies": lambda: hazards.allergy_hazards(case, named),
        "interactions": lambda: hazards.interaction_hazards(case),
        "prohibitions": lambda: hazards.prohibitions(case.advice, pack.offline.harm_theme),
        "not_used": lambda: hazards.not_used(case.advice, pack.offline.harm_theme),
        "red_flags": lambda: hazards.red_flags(case.advice),
    }
    found = [h for name in pack.offline.hazards for h in hazards.weighed(detectors[name](), name, pack)]
    return found + hazards.pattern_hazards(case.advice, pack.offline.pattern_hazards)


def negatives(case: Case, pack: DomainPack | None = None) -> list[DraftCriterion]:
    axis = (pack or medical()).offline.negative_axis
    return [
        DraftCriterion(
            text=h.criterion,
            polarity="negative",
            axis=axis,
            weight=h.weight,
            theme=h.theme,
            source_fact=h.source_fact,
            advice_index=h.advice_index,
        )
        for h in case_hazards(case, pack)
    ]


def wrong_values(drafts: list[DraftCriterion], pack: DomainPack | None = None) -> list[DraftCriterion]:
    """For each value a positive criterion requires and a wrong value of it can be named
    (`decisive.pairable`: a bound, a safety net's trigger, a jurisdiction), a negative naming the wrong
    side: on the negative axis at the pack's `decisive.harm_weight` where it harms (past its limit, in
    advice under `decisive.harm_theme`: a dose over its maximum, a claim after its time limit), else on
    the pack's `decisive.axis`; none where a negative criterion from the same advice element already
    names it (the legal pack's limitation-period hazard)."""
    pack = pack or medical()
    spec = pack.decisive
    out: list[DraftCriterion] = []
    for draft in drafts:
        if draft.polarity != "positive" or not draft.source_fact:
            continue
        others = [d for d in drafts if d.polarity == "negative" and d.advice_index == draft.advice_index]
        harmful = spec.harm_theme in themes_of(draft.source_fact, pack)
        for value in decisive.decisive(draft.source_fact, pack):
            if not decisive.pairable(value) or not decisive.required(value, draft.text, pack):
                continue
            if any(decisive.names(value, d.text) for d in others):
                continue
            harms = harmful and value.kind in spec.harm_kinds and value.bound == "upper"
            axis, weight = (
                (pack.offline.negative_axis, spec.harm_weight) if harms else (spec.axis, spec.weight)
            )
            out.append(
                DraftCriterion(
                    text=decisive.wrong_value_text(value, draft.text.replace(f"{AT_LEAST} ", ""), pack),
                    polarity="negative",
                    axis=axis,
                    weight=weight,
                    theme=draft.theme,
                    source_fact=draft.source_fact,
                    advice_index=draft.advice_index,
                )
            )
    return out


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
    """The rule-based rubric writer baseline, for one domain pack (default: medical)."""

    name = "rules"

    def __init__(self, pack: DomainPack | None = None) -> None:
        self.pack = pack or medical()

    def draft(self, case: Case) -> tuple[list[str], list[DraftCriterion], list[dict[str, Any]]]:
        pack = self.pack
        themes = sorted({t for element in case.advice for t in themes_of(element, pack)})
        facts = [
            {"fact": e, "advice_index": i, "themes": themes_of(e, pack)} for i, e in enumerate(case.advice)
        ]
        drafts = positives(case, pack) + negatives(case, pack)
        drafts += wrong_values(drafts, pack)
        steps: list[dict[str, Any]] = [
            {"step": "themes", "rules": "keywords", "output": {"themes": themes, "facts": facts}},
            {
                "step": "criteria",
                "rules": "one positive per fact (the action it asks, its decisive values required); "
                "negatives for the advice's warnings and red flags, the patient's drug allergies and "
                "interactions with listed medications, and a wrong decisive value (dose, interval, time, "
                "threshold)",
            },
            {"step": "weights", "rules": weight_rules(pack)},
        ]
        return themes, drafts, steps


def weight_rules(pack: DomainPack) -> str:
    """The weight rules in words, for the record: "safety 8 (theme:emergency referral), …"."""
    rules = [f"{r.axis} {r.weight} ({' and '.join(r.when) or 'always'})" for r in pack.offline.weight_rules]
    rules.append(f"else {pack.offline.default_axis} {pack.offline.default_weight}")
    weights = {**hazards.DEFAULT_WEIGHTS, **pack.offline.hazard_weights}
    negatives = [f"{name} {weights[name]}" for name in pack.offline.hazards]
    negatives += [f"{h.name} {h.weight}" for h in pack.offline.pattern_hazards]
    return (
        f"pack {pack.name}: "
        + ", ".join(rules)
        + f"; negatives on {pack.offline.negative_axis}: "
        + (", ".join(negatives) or "none")
    )
