"""Criterion wording for the rule-based rubric writer: an advice element as the clinical action it asks.

"Management: We recommend anticoagulation with a direct oral anticoagulant such as apixaban" becomes
"Recommends anticoagulation with a direct oral anticoagulant such as apixaban": section labels,
frames ("we recommend", "you should", "I would suggest", "advise her to") and hedges ("consider",
"try to", "it may be worth") go; drug names, doses, durations and conditions stay word for word, so
a lexical grader still finds them. Patient-directed imperatives read "Advises the patient to …" (the
verb kept as written), clinician-directed ones "Recommends reviewing …", statements "Explains that …",
prohibitions "Advises not to …" / "Advises avoiding …" (the negation kept, so a negation-aware grader
matches "do not use aspirin").
"""

from __future__ import annotations

import re

_LABEL = re.compile(
    r"^\s*(?:management|treatment|advice|recommendations?|plan|answer|note|summary|diagnosis|conclusions?"
    r"|key points?|learning points?|outcome|follow-up|[a-z ]{0,20}(?:management|treatment|advice)):\s+",
    re.IGNORECASE,
)
_FRAMES = (
    r"(?:i|we) (?:would |'d |strongly |also |usually |generally )*(?:recommend|suggest|advise)(?: that)?",
    r"(?:my|our) (?:advice|recommendation|suggestion) (?:is|would be)(?: to| that)?",
    r"it (?:is|would be|may be|might be) (?:important|worth|best|sensible|a good idea|advisable|wise) to",
    r"it (?:is|would be|may be|might be) worth",
    r"(?:please|kindly|ideally|also|then|first|finally|meanwhile)[, ]",
    r"make sure (?:that )?(?:you )?(?:to )?",
    r"try to",
    r"consider",
    r"you (?:should|need to|must|may want to|might want to|could|can|ought to|will need to|may need to)"
    r"(?: also| probably| definitely| still)?",
    r"(?:he|she|they) (?:should|needs to|need to|must)",
)
_FRAME = re.compile(rf"^\s*(?:{'|'.join(_FRAMES)})\s*", re.IGNORECASE)
_ADVISE_SOMEONE = re.compile(
    r"^\s*(?:advise|tell|ask|instruct|encourage|remind)\s+(him|her|them|the patient|the parents?|parents)\s+"
    r"(?:to\s+)?",
    re.IGNORECASE,
)
_ADVISE = re.compile(r"^\s*(?:advise|offer|recommend|suggest)\s+", re.IGNORECASE)
_PROHIBIT = re.compile(r"^\s*(?:do not|don't|don’t|never|should not|must not)\s+", re.IGNORECASE)
_AVOID = re.compile(r"^\s*(avoid|stop|refrain from|discontinue)\s+", re.IGNORECASE)
# clinician-directed verbs (case reports): "Review the patient…" → "Recommends reviewing the patient…"
GERUNDS = {
    "review": "reviewing",
    "refer": "referring",
    "recheck": "rechecking",
    "repeat": "repeating",
    "treat": "treating",
    "mark": "marking",
    "diagnose": "diagnosing",
    "prescribe": "prescribing",
    "arrange": "arranging",
    "protect": "protecting",
    "prevent": "preventing",
    "start": "starting",
    "give": "giving",
    "monitor": "monitoring",
    "admit": "admitting",
    "measure": "measuring",
    "check": "checking",
    "continue": "continuing",
    "use": "using",
    "take": "taking",
    "drive": "driving",
    "drink": "drinking",
    "eat": "eating",
}
_VOWELS = "aeiou"


def gerund(verb: str) -> str:
    """ "skip" → "skipping", "drive" → "driving", "lie" → "lying", "check" → "checking"."""
    low = verb.lower()
    if low in GERUNDS:
        return GERUNDS[low]
    if low.endswith("ie"):
        return low[:-2] + "ying"
    if low.endswith("e") and not low.endswith(("ee", "ye", "oe")):
        return low[:-1] + "ing"
    short_cvc = len(low) <= 4 and len(low) >= 3 and low[-1] not in _VOWELS + "wxy"
    if short_cvc and low[-2] in _VOWELS and low[-3] not in _VOWELS:
        return low + low[-1] + "ing"  # a short consonant-vowel-consonant verb doubles its consonant
    return low + "ing"


_CLINICIAN_TEXT = (
    "review refer recheck repeat treat mark diagnose prescribe arrange protect prevent admit measure"
)
CLINICIAN_VERBS = frozenset(_CLINICIAN_TEXT.split())
_LEADS_TEXT = "if once when for during after until while before whenever"
_LEADS = frozenset(_LEADS_TEXT.split())
_IMPERATIVES_TEXT = (
    "take avoid use apply stop seek see keep drink rest offer advise try ensure limit reduce increase "
    "cut elevate wash eat follow schedule book contact ask tell encourage discuss remove raise put get go "
    "wear switch change lose quit walk sleep cover clean call return report have give dress practise "
    "practice aim start continue build do make let bring write record read check monitor talk speak "
    "visit attend wait sit stand lie place hold press massage gargle spray soak dry moisturise moisturize"
)
IMPERATIVES = frozenset(_IMPERATIVES_TEXT.split())
_EXPLAIN = re.compile(r"^\s*(?:explain|warn \w+|reassure \w+|tell \w+)\s+(?:that\s+)?", re.IGNORECASE)
_STATEMENT = re.compile(
    r"^\s*(?:this|that|it|these|those|there|the|a|an|most|many|your|such|what|ectopic|symptoms?)\b", re.I
)
_PRONOUNS = (
    (re.compile(r"\byourself\b", re.I), "themselves"),
    (re.compile(r"\byou're\b|\byou are\b", re.I), "they are"),
    (re.compile(r"\byour\b", re.I), "their"),
)
_YOU = re.compile(r"(\b\w+\W+)?\byou\b", re.IGNORECASE)
_SUBJECT_TEXT = (
    "if when because so and or but that until unless while as before after once where than whether"
    " what which who"
)
_SUBJECT_AFTER = frozenset(_SUBJECT_TEXT.split())


def third_person(text: str) -> str:
    """The advice's "you"/"your" as "they"/"their"/"them" (the criterion speaks about the patient)."""
    for pattern, repl in _PRONOUNS:
        text = pattern.sub(repl, text)

    def swap(m: re.Match[str]) -> str:
        before = m.group(1) or ""
        word = before.strip(" ,;:").lower()
        subject = not before or word in _SUBJECT_AFTER or before.rstrip().endswith((",", ";", ":"))
        return f"{before}{'they' if subject else 'them'}"

    return _YOU.sub(swap, text)


def core(element: str) -> str:
    """The element without its section label and leading frames and hedges (at most four layers)."""
    text = _LABEL.sub("", element.strip(), count=1)
    for _ in range(4):
        stripped = _FRAME.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return text.strip().rstrip(".").strip()


def criterion_text(element: str, person: str = "the patient") -> str:
    """The positive criterion for one advice element: the action it asks, specifics kept; `person` is
    who the advice is for (the domain pack's: "the patient", "the person")."""
    text = core(element)
    if not text:
        return f"Advises: {element.strip().rstrip('.')}."
    return _framed(text, person) or _by_first_word(text, person)


def _framed(text: str, person: str) -> str | None:
    """Elements that open with who is advised, a prohibition, "avoid/stop", "explain" or "offer"."""
    if m := _ADVISE_SOMEONE.match(text):
        who = "the parents" if m.group(1).lower().startswith(("the parent", "parent")) else person
        return f"Advises {who} to {third_person(text[m.end() :])}."
    if m := _PROHIBIT.match(text):
        return f"Advises not to {third_person(text[m.end() :])}."
    if m := _AVOID.match(text):
        verb = {"avoid": "avoiding", "stop": "stopping", "discontinue": "stopping"}.get(m.group(1).lower())
        return f"Advises {verb or 'avoiding'} {third_person(text[m.end() :])}."
    if m := _EXPLAIN.match(text):
        return f"Explains that {third_person(text[m.end() :])}."
    if m := _ADVISE.match(text):
        return f"Recommends {third_person(text[m.end() :])}."
    return None


def _by_first_word(text: str, person: str) -> str:
    first = text.split(maxsplit=1)[0].lower().strip(",")
    lowered = third_person(_lower_first(text))
    if first in _LEADS:
        return f"Advises {person}: {lowered}."
    if first in CLINICIAN_VERBS:
        return f"Recommends {GERUNDS[first]} {third_person(text.split(maxsplit=1)[1])}."
    if first.endswith("ing") and len(first) > 4:
        return f"Recommends {lowered}."
    if _STATEMENT.match(text) or re.match(r"^\s*(?:i|we)\b", text, re.I):
        return f"Explains that {lowered}."
    if first in IMPERATIVES:
        return f"Advises {person} to {lowered}."
    head = re.split(r",?\s+(?:which|who|such as|to)\b", text, maxsplit=1)[0]  # not "to reduce", "which can"
    if re.search(r"\b(?:is|are|can|may|will|helps?|reduces?|causes?|makes?|means?)\b", head, re.I):
        return f"Explains that {lowered}."
    return f"Recommends {lowered}."


def _lower_first(text: str) -> str:
    first = text.split(maxsplit=1)[0]
    return text if first.isupper() and len(first) > 1 else text[:1].lower() + text[1:]
