"""Rules behind the offline curation baseline: sections, sentence cues and regexes (no model).

These are deliberately simple and transparent; they are a baseline, not a substitute for an LLM. The
cue words that put a fact under a narrative field come from the domain pack (`[offline.narrative_cues]`,
`fallback_cues`); the medical pack's are the ones described in `baseline.py`.
"""

from __future__ import annotations

import re

from livemed.common.text import sentences
from livemed.curate.sections import (
    OUTCOME_HEADINGS,
    advice_like,
    narrative_sentences,
    report_advice,
    sections,
)
from livemed.domains import DomainPack, medical
from livemed.records import Narrative

_SECTION = re.compile(r"^\s*([A-Za-z][A-Za-z /]{1,40}?)\s*:\s*(.+?)\s*$")

AGE = re.compile(
    r"\b\d{1,2}[- ](?:months?|weeks?)[- ]old\b"
    r"|\b\d{1,3}[- ]?(?:years?|yrs?|y/o|yo)(?:[- ]old)?\b|\b(?:i am|i'm|im|aged?)\s+\d{1,3}\b"
    r"|\b\d{1,3} ?[MF]\b|\bage[d]?:? ?\d{1,3}\b|\b(?:male|female|man|woman|[MF]),? \d{1,3}\b",
    re.IGNORECASE,
)
SEX = re.compile(
    r"\b(?:male|female|man|woman|boy|girl|gentleman|lady|son|daughter|husband|wife|mother|father|mum|mom|dad"
    r"|\d{1,3} ?[MF]|[MF],? \d{1,3})\b",
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


_ASKING = re.compile(
    r"^(?:should|what|how|is|are|can|could|do|does|would|will|why|which|any (?:advice|ideas|thoughts))\b",
    re.IGNORECASE,
)


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


def is_asking(sentence: str) -> bool:
    """A question, with or without its question mark (forum posters often drop it)."""
    return is_question(sentence) or bool(_ASKING.match(sentence.strip()))


_HEADING_FIELDS = {"investigations": "exam_labs"}
_CLAUSE = re.compile(
    r",\s+and\s+|;\s+|,\s+but\s+|\s+and\s+(?=(?:i|he|she|they|we|my|his|her|had|has|have|took|takes|take)\b)"
    r"|,\s+(?=(?:i|he|she|they|we|had|has|have|took|takes|take|was|is)\b)",
    re.IGNORECASE,
)
_N = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|several|couple of|a few)"
_UNIT = r"(?:hours?|days?|weeks?|months?|years?)"
# A time expression: when the problem began or how long it has lasted ("since yesterday evening",
# "about two months ago", "over the last year", "three days of …"); never a bare "started".
ONSET = re.compile(
    r"\b(?:since\s+)?(?:last night|this morning|yesterday(?:\s+(?:morning|afternoon|evening))?|overnight)\b"
    rf"|\b{_N}[- ]{_UNIT.replace('s?', '')}[- ]history(?:\s+of)?\b"
    rf"|\b{_N}\s+{_UNIT}\s+of\b"
    rf"|\b(?:for|since|over|about|around|almost|nearly)\s+(?:(?:about|around|almost|nearly|over)\s+)?"
    rf"(?:the\s+(?:past|last)\s+(?:{_N}\s+)?|{_N}\s+)(?:(?!every\b)\w+\s+)?{_UNIT}\b(?:\s+ago\b)?"
    rf"|\b{_N}\s+{_UNIT}\s+ago\b"
    r"|\bsince\s+(?:last\s+\w+|this\s+\w+|\w+day)\b",
    re.IGNORECASE,
)
# Where a clause ends: what "three days of …" runs to, so that the onset reads as a phrase.
_CLAUSE_END = re.compile(
    r"[;!?]|\.(?!\d)|,\s+(?:which|who|followed|but|and then|so|then|after|before|when|while)\b"
    r"|,\s+(?=(?:i|he|she|they|we|it|his|her|my)\b)"
)


def onset_phrase(text: str) -> str | None:
    """The first time expression in `text` as a readable phrase: "since yesterday evening", "about
    two months ago"; one that ends in "of" ("three days of") runs on to the end of its clause
    ("three days of runny nose and cough"). None when `text` holds no time expression."""
    found = ONSET.search(text)
    if found is None:
        return None
    if not found.group().lower().endswith(" of"):
        return found.group()
    end = _CLAUSE_END.search(text, found.end())
    phrase = text[found.start() : end.start() if end else len(text)].strip()
    return phrase if not phrase.lower().endswith(" of") else None


def extract_narrative(
    text: str, *, report: bool = False, diagnostic: bool = False, pack: DomainPack | None = None
) -> Narrative:
    """Narrative facts from a post or report, each sentence (or clause) under the one slot it fits
    best by the domain pack's cues (default: medical); held-back sections and advice- or outcome-like
    sentences left out, and for a `diagnostic` report its front matter and the sentences that state the
    diagnosis (`sections`). In a post, a sentence no cue claims is the chief complaint when it says what
    is wrong and none was found (medical slots), else it goes to the pack's fallback slot: the asker's
    own facts are all kept, since the advice may rest on any of them."""
    pack = pack or medical()
    facts: dict[str, list[str]] = {name: [] for name in pack.narrative_slots}
    used = narrative_sentences(text, report=report, diagnostic=diagnostic, pack=pack)
    unplaced: list[str] = []  # sentences no slot's cues claim, in text order
    for heading, sentence in used:
        if is_asking(sentence):
            continue
        section = _SECTION.match(sentence)
        if section and _SECTION_FIELDS.get(section.group(1).strip().lower()) in facts:
            facts[_SECTION_FIELDS[section.group(1).strip().lower()]].append(sentence)
            continue
        placed = False
        for clause in _clauses(sentence, pack):
            field = _HEADING_FIELDS.get(heading or "") or best_field(clause, pack)
            if field in facts:
                facts[field].append(clause)
                placed = True
        if not placed:
            unplaced.append(sentence)
    if not report and pack.offline.fallback_slot in facts:  # the asker's own facts: none left out
        claimed = {fact for values in facts.values() for fact in values}
        rest = [s for s in unplaced if s not in claimed and len(s.split()) >= MIN_FACT_WORDS]
        facts[pack.offline.fallback_slot].extend(rest)
    if facts.keys() >= MEDICAL_SLOTS:
        _medical_defaults(facts, [s for _, s in used if not is_asking(s)], text)
    return Narrative(**{name: _unique(values) for name, values in facts.items()})


# A sentence that says what is wrong (the chief complaint, when no slot's cues claimed it). "Started"
# and "began" count only for a problem that began ("it started two months ago", "began suddenly"),
# never for what the patient started doing or taking ("I've started walking", "started metformin").
COMPLAINT = re.compile(
    r"\b(?:i(?:'ve| have)? (?:noticed|had|been having|developed|got|get|keep)"
    r"|i(?:'m| am) (?:having|getting)|(?:has|have) (?:been|had|become)|feels?|hurts?|pains?"
    r"|(?:started|began)(?=\s+(?:about|around|over|last|yesterday|this|after|when|while|suddenly|gradually"
    r"|again|\d)\b|\s*[,.;]|\s*$)"
    r"|since|for (?:the )?(?:past|last|about)|(?:hours?|days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE,
)
# A sentence that refers back to the one before it ("Since then I've had loose stools"): it is a
# complaint only together with that sentence, which says since when.
FOLLOWS_ON = re.compile(r"^(?:since then|ever since|after that|since that (?:time|day))\b", re.IGNORECASE)
# A report's sentence that presents the patient ("A 68-year-old man presented with …").
PRESENTED = re.compile(
    r"\b(?:presented|presenting|presents|was brought (?:in )?|was admitted|was referred|attended)"
    r"(?: to \w+(?: \w+)?)? with\b|\bcomplain(?:s|ed|ing)? of\b",
    re.IGNORECASE,
)
MIN_FACT_WORDS = 4  # a shorter sentence no cue claims ("Hi all.", "Thanks!") is not a fact
MEDICAL_SLOTS = frozenset({"demographics", "chief_complaint", "symptoms", "onset_duration"})


def _medical_defaults(facts: dict[str, list[str]], plain: list[str], text: str) -> None:
    """The medical slots no cue filled: the chief complaint (`_pick_complaint`), the demographics
    (age and sex by pattern) and the onset (the first time expression in the complaint, as a phrase)."""
    if not facts["chief_complaint"]:
        _pick_complaint(facts, plain, text)
    facts["demographics"] = facts["demographics"] or _first_matches(plain, (AGE, SEX))
    if not facts["onset_duration"]:
        complaint_facts = facts["chief_complaint"] + facts["symptoms"]
        phrases = (onset_phrase(f) for f in complaint_facts or plain[:1])
        facts["onset_duration"] = [p for p in phrases if p][:1]


def _pick_complaint(facts: dict[str, list[str]], plain: list[str], text: str) -> None:
    """The chief complaint, moved from its slot: the first fact, in text order, that presents the
    patient, else the first that says what is wrong (a symptom, or a sentence that follows on, such as
    "Since then I've had loose stools" under the medicines), else the first symptom. A fact that follows
    on is joined to the sentence it refers back to, so that the complaint reads on its own."""
    presenting = [(slot, f) for slot, values in facts.items() for f in values if PRESENTED.search(f)]
    following = [
        (slot, f)
        for slot, values in facts.items()
        for f in values
        if (on := FOLLOWS_ON.match(f)) and (slot == "symptoms" or COMPLAINT.search(f, on.end()))
    ]
    symptoms = [("symptoms", f) for f in facts["symptoms"] if not _SECTION.match(f)]  # not "Symptoms: …"
    complaints = [(s, f) for s, f in symptoms if COMPLAINT.search(f) and not FOLLOWS_ON.match(f)]
    pool = presenting or following + complaints or symptoms
    if not pool:
        return
    slot, fact = min(pool, key=lambda item: _position(item[1], text))
    facts[slot].remove(fact)
    if FOLLOWS_ON.match(fact):
        fact = _with_antecedent(fact, facts, plain, text)
    facts["chief_complaint"].append(fact)


def _with_antecedent(fact: str, facts: dict[str, list[str]], plain: list[str], text: str) -> str:
    """`fact` preceded by the sentence it refers back to (as the text has them), which leaves its own
    slot: "My doctor started metformin 500 mg twice a day. Since then I've had loose stools"."""
    here = next((i for i, sentence in enumerate(plain) if sentence.startswith(fact)), 0)
    if here == 0:
        return fact
    antecedent = plain[here - 1]
    for values in facts.values():  # the antecedent, or its clauses, now belong to the complaint
        values[:] = [f for f in values if len(f.split()) < MIN_FACT_WORDS or f not in antecedent]
    start, end = text.find(antecedent), text.find(fact)
    if 0 <= start < end:
        return text[start : end + len(fact)].strip()
    return f"{antecedent.rstrip()} {fact}"


def _position(fact: str, text: str) -> int:
    where = text.find(fact)
    return where if where >= 0 else len(text)


def best_field(text: str, pack: DomainPack | None = None) -> str | None:
    """The narrative field a fact fits best by the pack's cues: the most cue words, ties to the earlier
    field; else the pack's fallback field when a fallback cue is there."""
    pack = pack or medical()
    hits = [(slot, len(pattern.findall(text))) for slot, pattern in pack.narrative_patterns]
    top = max((n for _, n in hits), default=0)
    if top:
        return next(slot for slot, n in hits if n == top)
    fallback = pack.fallback_pattern
    return pack.offline.fallback_slot if fallback is not None and fallback.search(text) else None


def _clauses(sentence: str, pack: DomainPack) -> list[str]:
    """A sentence split into clauses when they fit different fields ("meds X, and no allergies"):
    a clause that fits no field stays with its neighbour; each clause is a slice of the sentence."""
    cuts = [0, *(m.end() for m in _CLAUSE.finditer(sentence)), len(sentence)]
    starts = [m.start() for m in _CLAUSE.finditer(sentence)]
    pieces = [(cuts[i], (starts[i] if i < len(starts) else len(sentence))) for i in range(len(cuts) - 1)]
    merged: list[tuple[int, int, str | None]] = []
    for lo, hi in pieces:
        field = best_field(sentence[lo:hi], pack)
        if merged and (field is None or field == merged[-1][2]):
            merged[-1] = (merged[-1][0], hi, merged[-1][2])
        elif merged and merged[-1][2] is None:
            merged[-1] = (merged[-1][0], hi, field)
        else:
            merged.append((lo, hi, field))
    if len(merged) < 2:
        return [sentence]
    return [sentence[lo:hi].strip().rstrip(".") for lo, hi, _ in merged]


def _first_matches(texts: list[str], patterns: tuple[re.Pattern[str], ...], limit: int = 2) -> list[str]:
    """The first match of each pattern, in text order (at most `limit` in all)."""
    found: list[str] = []
    for pattern in patterns:
        hit = next((m.group() for t in texts for m in pattern.finditer(t) if len(m.group()) > 2), None)
        if hit and len(found) < limit and all(hit.lower() not in f.lower() for f in found):
            found.append(hit)
    return found


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
    """Recommendation sentences (physician replies), or a report's management: its management and
    treatment sections, else its sentences with management cues (never its outcome)."""
    if report:
        managed = report_advice(text)
        if managed:
            return _unique(managed)
        return _unique(
            [
                s
                for section in sections(text)
                if section.heading not in OUTCOME_HEADINGS
                for s in section.sentences
                if not is_question(s) and (REPORT_ADVICE.search(s) or advice_like(s))
            ]
        )
    return _unique([s for s in sentences(text) if not is_question(s) and ADVICE.search(s)])


def derived_query(text: str) -> str:
    """The clinical question a case report answers (a template: it is marked as derived)."""
    if DIAGNOSIS.search(text):
        return "What is the most likely diagnosis, and how should this patient be managed?"
    return "How should this patient be managed?"
