"""Rules behind the offline curation baseline: sections, sentence cues and regexes (no model).

These are deliberately simple and transparent; they are a baseline, not a substitute for an LLM.
"""

from __future__ import annotations

import re

from livemed.records import Narrative

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_SECTION = re.compile(r"^\s*([A-Za-z][A-Za-z /]{1,40}?)\s*:\s*(.+?)\s*$")

AGE = re.compile(
    r"\b\d{1,3}[- ]?(?:years?|yrs?|y/o|yo)(?:[- ]old)?\b|\b(?:i am|i'm|im|aged?)\s+\d{1,3}\b"
    r"|\b\d{1,3} ?[MF]\b|\bage[d]?:? ?\d{1,3}\b|\b(?:male|female|man|woman|[MF]),? \d{1,3}\b",
    re.IGNORECASE,
)
SEX = re.compile(
    r"\b(?:male|female|man|woman|boy|girl|gentleman|lady|son|daughter|husband|wife|mother|father|mum|mom|dad"
    r"|\d{1,3} ?[MF]|[MF],? \d{1,3})\b",
    re.IGNORECASE,
)
DURATION = re.compile(
    r"\b(?:for|since|over|past|last|about|almost|nearly)\s+(?:the\s+)?(?:past\s+|last\s+)?"
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|several|couple of)\s+"
    r"(?:\w+\s+)?(?:hours?|days?|weeks?|months?|years?)\b"
    r"|\b(?:\d+|a|an|one|two|three|few|several)\s+(?:hours?|days?|weeks?|months?|years?)\s+ago\b"
    r"|\bsince\s+(?:yesterday|last\s+\w+|this\s+\w+|\w+day)\b|\b(?:started|began)\b",
    re.IGNORECASE,
)
_CUES: dict[str, re.Pattern[str]] = {
    "allergies": re.compile(r"\ballerg", re.IGNORECASE),
    "medications": re.compile(
        r"\b(?:taking|take|took|prescribed|medications?|medicines?|meds|\d+\s?mg|tablets?|pills?|inhaler"
        r"|supplements?|contraceptives?)\b",
        re.IGNORECASE,
    ),
    "history": re.compile(
        r"\b(?:history|diagnosed|surgery|operation|previously|in the past|chronic|otherwise healthy"
        r"|healthy otherwise|had (?:a|an) \w+(?: \w+)? (?:\w+ )?(?:weeks?|months?|years?) ago"
        r"|(?:have|had|with) (?:type \d |mild |severe )?(?:diabetes|asthma|hypertension|high blood pressure"
        r"|copd|epilepsy|depression|anxiety|migraines?|arthritis|hypothyroidism|heart disease|cancer"
        r"|kidney disease|eczema|ibs|reflux|gerd))\b",
        re.IGNORECASE,
    ),
    "exam_labs": re.compile(
        r"\b(?:blood (?:test|work|pressure)|labs?|x-?ray|ultrasound|mri|ct|scan|ecg|ekg|results?|levels?"
        r"|temperature|biopsy|examination|exam|hba1c|tsh)\b",
        re.IGNORECASE,
    ),
}
SYMPTOM = re.compile(
    r"\b(?:pain|ache|aches|aching|hurts?|sore|fever|cough|nausea|vomit\w*|rash|swell\w*|swollen|dizz\w*"
    r"|headaches?|migraines?|fatigue|tired\w*|bleed\w*|itch\w*|numb\w*|tingl\w*|breath\w*|wheez\w*"
    r"|diarrh\w*|constipat\w*|cramps?|burning|lump|discharge|palpitations?|insomnia|anxi\w*|weak\w*"
    r"|stiff\w*|symptoms?|spots?|redness|sweat\w*|chills|faint\w*|blurr\w*|congest\w*|runny|sneez\w*)\b",
    re.IGNORECASE,
)
ADVICE = re.compile(
    r"\b(?:you should|you need to|you must|you may want to|you might want to|you can|i (?:would |'d )?"
    r"(?:recommend|suggest|advise)|recommended|please|make sure|avoid|see (?:a|your|an)|consult|seek"
    r"|go to|get (?:a|an|your)|don't|do not|stop|start|take|try|keep|drink|rest|continue|call|book"
    r"|schedule|monitor|apply|use|reduce|limit|increase|ask (?:your|for)|should be|wash|wear|eat|sleep"
    r"|elevate|follow|return|visit|quit|lose|walk|wait|practi[cs]e|(?:can|may|will|should) help"
    r"|(?:is|are) (?:usually |often )?treated with|it is (?:best|important|worth))\b",
    re.IGNORECASE,
)
REPORT_ADVICE = re.compile(
    r"\b(?:(?:was|were) (?:treated|started|managed|given|prescribed|referred|discharged|switched)"
    r"|treatment (?:with|consisted)|should|recommend\w*|we suggest|underwent|improved (?:with|after)"
    r"|resolved (?:with|after))\b",
    re.IGNORECASE,
)
DIAGNOSIS = re.compile(r"\b(?:diagnos\w*|consistent with|confirmed)\b", re.IGNORECASE)
_SECTION_FIELDS = {
    "age": "demographics",
    "sex": "demographics",
    "gender": "demographics",
    "chief complaint": "chief_complaint",
    "complaint": "chief_complaint",
    "symptoms": "symptoms",
    "symptom": "symptoms",
    "duration": "onset_duration",
    "onset": "onset_duration",
    "history": "history",
    "medical history": "history",
    "past medical history": "history",
    "medications": "medications",
    "medication": "medications",
    "current medications": "medications",
    "allergies": "allergies",
    "allergy": "allergies",
    "exam": "exam_labs",
    "labs": "exam_labs",
    "tests": "exam_labs",
}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


_ASKING = re.compile(
    r"^(?:should|what|how|is|are|can|could|do|does|would|will|why|which|any (?:advice|ideas|thoughts))\b",
    re.IGNORECASE,
)


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def is_asking(sentence: str) -> bool:
    """A question, with or without its question mark (forum posters often drop it)."""
    return is_question(sentence) or bool(_ASKING.match(sentence.strip()))


def extract_narrative(text: str) -> Narrative:
    """Narrative facts from a post or report: labelled sections first, then sentence cues."""
    facts: dict[str, list[str]] = {name: [] for name in Narrative.model_fields}
    for sentence in sentences(text):
        if is_asking(sentence):
            continue
        section = _SECTION.match(sentence)
        if section and section.group(1).strip().lower() in _SECTION_FIELDS:
            facts[_SECTION_FIELDS[section.group(1).strip().lower()]].append(sentence)
            continue
        _add_cued(facts, sentence)
    if not facts["chief_complaint"] and facts["symptoms"]:
        facts["chief_complaint"].append(facts["symptoms"][0])
    return Narrative(**{name: _unique(values) for name, values in facts.items()})


def _add_cued(facts: dict[str, list[str]], sentence: str) -> None:
    for pattern in (AGE, SEX):
        facts["demographics"].extend(m.group() for m in pattern.finditer(sentence))
    facts["onset_duration"].extend(m.group() for m in DURATION.finditer(sentence) if len(m.group()) > 7)
    cued = {field for field, pattern in _CUES.items() if pattern.search(sentence)}
    for field in cued:
        facts[field].append(sentence)
    if SYMPTOM.search(sentence) and not cued & {"allergies", "medications"}:
        facts["symptoms"].append(sentence)


def _unique(values: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.strip().lower(), value.strip())
    return [v for v in seen.values() if v]


def extract_questions(text: str) -> list[str]:
    found = []
    for sentence in sentences(text):
        section = _SECTION.match(sentence)
        if section and section.group(1).strip().lower() == "question":
            found.append(section.group(2))
        elif is_asking(sentence):
            found.append(section.group(2) if section else sentence)
    return found


def extract_advice(text: str, *, report: bool = False) -> list[str]:
    """Recommendation sentences (physician replies), or management sentences (case reports)."""
    pattern = REPORT_ADVICE if report else ADVICE
    return _unique([s for s in sentences(text) if not is_question(s) and pattern.search(s)])


def derived_query(text: str) -> str:
    """The clinical question a case report answers (a template: it is marked as derived)."""
    if DIAGNOSIS.search(text):
        return "What is the most likely diagnosis, and how should this patient be managed?"
    return "How should this patient be managed?"
