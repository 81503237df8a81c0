"""Decisive values: a dose, an interval, a threshold, a time limit or a jurisdiction that decides the
advice. A reply with the wrong one is a wrong reply, so a positive criterion whose source fact holds one
requires it (never as a "such as" example), and a negative criterion names the wrong value.

What counts is the domain pack's (`[decisive.patterns]`, kind → regex; `{number}` in a pattern stands
for a number in digits or words, "48 to 72" included). A value inside the source's own example clause
("for example 5 ml every few minutes") is an example there too, not a decisive value.

`decisive_values` finds them; the offline writer (`rules.wrong_values`) and the lint
(`check.decisive_findings`) use it; `decisive_share` measures a rubric.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol

from livemed.common.numbers import DIGIT_WORDS, WORD_NUMBERS
from livemed.domains import DomainPack, medical

_ONE = rf"(?:\d+(?:[.,]\d+)?|(?:{'|'.join(WORD_NUMBERS)})(?:[- ](?:{'|'.join(DIGIT_WORDS)}))?)"
NUMBER = rf"{_ONE}(?:\s?(?:to|-|–|or)\s?{_ONE})?"
# An example clause: from its marker to the end of its noun phrase: the clause's end (";", ")", a
# sentence's end) or a value the examples are given for ("such as apixaban for at least three months").
_EXAMPLE = re.compile(
    r"\b(?:such as|for example|for instance|e\.g\.|eg|including|like)\b.*?"
    rf"(?=;|\)|(?<!\d)\.(?!\d)|$|,?\s(?:for|at|within|every|until|after|before|over|in|up to|no more than)"
    rf"\s(?:(?:least|most|the first|the next)\s)?{NUMBER}\b)",
    re.IGNORECASE,
)
# A limit the advice sets (not a condition such as "if it is below 5 mmol/L"): a wrong value lies past it.
_UPPER = re.compile(
    r"\b(?:no more than|not more than|up to|maximum(?: of)?|max\.?|at most|less than|fewer than"
    r"|not (?:to )?exceed(?:ing)?|no later than|within|before)\s*$",
    re.IGNORECASE,
)
_LOWER = re.compile(r"\b(?:at least|no less than|not less than|minimum(?: of)?|until)\s*$", re.IGNORECASE)
# A safety net: a cautious action (seek care, see a doctor, do not drive) and a condition ("if", "when")
# before the value. Only the less cautious side is wrong: a later or higher trigger ("waiting longer than
# five days of fever") for a value past "more than"/"after"/"for", a lower one for "below"/"less than".
_CONDITION = re.compile(r"\b(?:if|when|unless|should)\b[^;.]*$", re.IGNORECASE)
_CAUTIOUS = re.compile(
    r"\b(?:see|seek|call|contact|return|go to|attend|review|ring|phone|refer\w*|urgent\w*|emergency"
    r"|doctor|nurse|pharmacist|do not|don't|avoid|stop)\b",
    re.IGNORECASE,
)
_LATER = re.compile(
    r"\b(?:more|longer|greater|higher) than|\b(?:over|above|after|for|in|within|beyond|exceeds?)\s*$",
    re.IGNORECASE,
)
_SOONER = re.compile(r"\b(?:less|lower|fewer|shorter) than|\b(?:below|under)\s*$", re.IGNORECASE)
_LEAD = re.compile(
    r"^(?:(?:no|not) (?:more|less|later) than|up to|maximum(?: of)?|at (?:least|most)|less than|more than"
    r"|fewer than|higher than|lower than|greater than|longer than|shorter than|below|above|under"
    r"|over the (?:next|first)|over|within|for the first|for|every|until|after|before|in the (?:first|next)"
    r"|the first|by|exceeds?|≥|≤|>|<|at|in)\s*",
    re.IGNORECASE,
)
Bound = Literal["upper", "lower", "exact"]


class Stated(Protocol):
    """A criterion, drafted or recorded."""

    @property
    def text(self) -> str: ...
    @property
    def polarity(self) -> str: ...
    @property
    def source_fact(self) -> str | None: ...


@dataclass(frozen=True)
class Value:
    """One decisive value as written ("no more than 4 g a day"), its kind (the pack's noun: "dose"),
    the amount a wrong value is said against ("4 g a day"), and whether the advice bounds it."""

    text: str
    kind: str
    amount: str
    bound: Bound
    start: int
    end: int
    example: bool  # inside an example clause ("such as …"): not a requirement where it stands
    net: bool = False  # the condition of a safety net ("see a doctor if the fever lasts more than …")

    @property
    def named(self) -> bool:
        """A name (a jurisdiction), not an amount: any other one is wrong."""
        return not _NUMERIC.search(self.text)

    @property
    def key(self) -> str:
        """The amount with its numbers in digits and units in one spelling: "six months" → "6 month"."""
        return value_key(self.amount)


_NUMERIC = re.compile(rf"\d|\b(?:{'|'.join(WORD_NUMBERS)}|once|twice)\b", re.IGNORECASE)


def value_key(amount: str) -> str:
    words = re.findall(r"\d+(?:[.,]\d+)?|[a-zµ°%/]+", amount.lower())
    out = [WORD_NUMBERS.get(w, w) for w in words if w not in ("a", "an", "per", "each", "of")]
    return " ".join(w.rstrip("s") if len(w) > 3 else w for w in out)


@lru_cache(maxsize=8)
def _patterns(pack: DomainPack) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple(
        (kind, re.compile(pattern.replace("{number}", NUMBER), re.IGNORECASE))
        for kind, pattern in pack.decisive.patterns.items()
    )


def example_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _EXAMPLE.finditer(text)]


def decisive_values(text: str, pack: DomainPack | None = None) -> list[Value]:
    """The decisive values in `text`, in order; overlapping matches are one value (the kind of the
    pack's first pattern among them)."""
    found: list[tuple[int, int, int, str]] = []
    for order, (kind, pattern) in enumerate(_patterns(pack or medical())):
        found += [(m.start(), m.end(), order, kind) for m in pattern.finditer(text) if m.group().strip()]
    merged: list[tuple[int, int, int, str]] = []
    for start, end, order, kind in sorted(found):
        if merged and start < merged[-1][1]:
            first, last_end, last_order, last_kind = merged[-1]
            keep = (last_order, last_kind) if last_order <= order else (order, kind)
            merged[-1] = (first, max(last_end, end), *keep)
        else:
            merged.append((start, end, order, kind))
    examples = example_spans(text)
    values = []
    for start, end, _, kind in merged:
        written = text[start:end].strip()
        net = _net_bound(text, start, written)
        values.append(
            Value(
                text=written,
                kind=kind,
                amount=_LEAD.sub("", written, count=1) or written,
                bound=net or _bound(text[:start], written),
                start=start,
                end=end,
                example=any(a <= start < b for a, b in examples),
                net=net is not None,
            )
        )
    return values


def _net_bound(text: str, start: int, written: str) -> Bound | None:
    """The wrong side of a safety net's value: "upper" for a trigger past it ("more than five days",
    "no wet nappy for 12 hours"), "lower" for one below it; None where the value is no safety net."""
    before = text[:start]
    if not _NUMERIC.search(written) or not _CONDITION.search(before) or not _CAUTIOUS.search(text):
        return None
    said = f"{before[-30:]} {_lead_of(written)}".rstrip()
    if _SOONER.search(said):
        return "lower"
    if _LATER.search(said):
        return "upper"
    return None


def _bound(before: str, written: str) -> Bound:
    if not _NUMERIC.search(written):
        return "exact"  # a name (a jurisdiction): another one is wrong
    for said in (_lead_of(written), before):  # the value's own lead first: "up to at least 150 minutes"
        if _UPPER.search(said):
            return "upper"
        if _LOWER.search(said):
            return "lower"
    return "exact"


def _lead_of(written: str) -> str:
    m = _LEAD.match(written)
    return m.group() if m else ""


def decisive(text: str, pack: DomainPack | None = None) -> list[Value]:
    """The values that decide the advice in `text`: those outside its example clauses."""
    return [v for v in decisive_values(text, pack) if not v.example]


def required(value: Value, criterion: str, pack: DomainPack | None = None) -> bool:
    """Does `criterion` state `value` as a requirement (outside any "such as" clause)?"""
    return any(v.key == value.key for v in decisive(criterion, pack))


def as_example(value: Value, criterion: str, pack: DomainPack | None = None) -> bool:
    """Does `criterion` state `value` only as an example ("such as 500 mg")?"""
    mine = [v for v in decisive_values(criterion, pack) if v.key == value.key]
    return bool(mine) and all(v.example for v in mine)


def names(value: Value, text: str) -> bool:
    """Does `text` name `value`'s amount (in any spelling: "six months", "6 months")?"""
    return f" {value.key} " in f" {value_key(text)} "


def decisive_share(criteria: Sequence[Stated], pack: DomainPack | None = None) -> tuple[int, int]:
    """(required, total): the positive criteria whose source fact holds a decisive value, and how many
    of them require every such value (a rubric's criteria, or any list)."""
    total = need = 0
    for c in criteria:
        if c.polarity != "positive" or not c.source_fact:
            continue
        values = decisive(c.source_fact, pack)
        if values:
            total += 1
            need += all(required(v, c.text, pack) for v in values)
    return need, total


def pairable(value: Value) -> bool:
    """Does a wrong value make a negative criterion? A value the advice bounds ("no more than 4 g a
    day", "within three months", "at least 150 minutes"), a safety net's trigger (only its less cautious
    side), a name (another jurisdiction); not an amount given without a limit ("doxycycline for 21
    days", where guidelines accept other courses: the positive criterion requires it, that is all)."""
    return value.bound != "exact" or value.named


def relation(value: Value) -> str:
    """How a wrong value stands to the advice's: past its bound, or just another one (a name)."""
    return {"upper": "of more than", "lower": "of less than", "exact": "other than"}[value.bound]


_TIMES = re.compile(r"\b(?:minutes?|hours?|days?|weeks?|months?|years?)\b", re.IGNORECASE)


def wrong_value_text(value: Value, criterion: str, pack: DomainPack | None = None) -> str:
    """The negative criterion naming the wrong value, for positive `criterion` that requires it:
    'States a dose of more than 4 g a day, not the 4 g a day of the correct advice ("… paracetamol 1 g,
    …")'. The "not" keeps a negation-aware lexical grader from meeting it with the correct value."""
    start, end = next(
        ((v.start, v.end) for v in decisive_values(criterion, pack) if v.key == value.key),
        (len(criterion), len(criterion)),
    )
    masked = _clause(criterion, start, end)
    article = "an" if value.kind[:1].lower() in "aeiou" else "a"
    wrong = f"{article} {value.kind} {relation(value)} {value.amount}"
    if value.net and value.bound == "upper" and _TIMES.search(value.amount):
        wrong = f"waiting longer than {value.amount}"  # a safety net: acting later is the wrong side
    return f'States {wrong}, not the {value.amount} of the correct advice ("{masked}").'


def _clause(criterion: str, start: int, end: int) -> str:
    """The clause of `criterion` that holds the value at [start, end), the value replaced by "…": what
    the value is about, without the rest of the criterion ("Recommends rechecking the haemoglobin …")."""
    left = max(criterion.rfind(", ", 0, start), criterion.rfind("; ", 0, start))
    right = min((i for i in (criterion.find(", ", end), criterion.find("; ", end)) if i >= 0), default=-1)
    head = criterion[left + 2 if left >= 0 else 0 : start]
    tail = criterion[end : right if right >= 0 else len(criterion)]
    if len(f"{head} {tail}".split()) < MIN_CLAUSE_WORDS:  # "no more than …": the whole criterion says more
        head, tail = criterion[:start], criterion[end:]
    return f"{head}…{tail}".strip().rstrip(".")


MIN_CLAUSE_WORDS = 3
