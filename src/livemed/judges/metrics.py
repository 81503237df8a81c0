"""The task metrics that rank candidates (see docs/judges.md, "Metrics").

- PICO: macro-F1 exact match over P, I, C, O (spans lowercased, punctuation stripped, whitespace
  collapsed; a set per key; both empty = 1, one empty = 0).
- MedCalc: squared error of the candidate's value (dates as days since 1970-01-01, gestational age
  as total days), plus MedCalc-Bench's own correctness rule as a flag.
- Choices: exact match.
"""

from __future__ import annotations

import math
import re
import string
from datetime import date, datetime

from livemed.judges.datasets.items import PICO_KEYS, CalcItem

_PUNCT = str.maketrans({c: " " for c in string.punctuation})
_AGE = re.compile(r"\(?\s*'?(\d+)\s*weeks?'?\s*,\s*'?(\d+)\s*days?'?\s*\)?", re.IGNORECASE)
DATE_CALCULATORS = (13, 68)
GESTATIONAL_AGE = 69


def normalise_span(span: str) -> str:
    return " ".join(span.lower().translate(_PUNCT).split())


def span_set(spans: list[str]) -> set[str]:
    return {n for n in map(normalise_span, spans) if n}


def key_f1(candidate: list[str], gold: list[str]) -> float:
    cand, ref = span_set(candidate), span_set(gold)
    if not cand and not ref:
        return 1.0
    if not cand or not ref:
        return 0.0
    hit = len(cand & ref)
    if not hit:
        return 0.0
    precision, recall = hit / len(cand), hit / len(ref)
    return 2 * precision * recall / (precision + recall)


def pico_macro_f1(candidate: dict[str, list[str]], gold: dict[str, list[str]]) -> float:
    """Mean over P, I, C, O of the per-key F1 (a missing key is empty)."""
    return sum(key_f1(candidate.get(k, []), gold.get(k, [])) for k in PICO_KEYS) / len(PICO_KEYS)


def parse_date(text: str) -> date:
    return datetime.strptime(text.strip(), "%m/%d/%Y").date()


def parse_age(text: str) -> tuple[int, int]:
    """A gestational age such as "('4 weeks', '2 days')" or "(4 weeks, 2 days)" as (weeks, days)."""
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a gestational age: {text!r}")
    return int(match.group(1)), int(match.group(2))


def format_age(weeks: int, days: int) -> str:
    return f"('{weeks} weeks', '{days} days')"


def encode(item: CalcItem, answer: str) -> float:
    """The number an answer stands for: the value, days since 1970-01-01, or total days of an age."""
    if item.calculator_id in DATE_CALCULATORS:
        return float((parse_date(answer) - date(1970, 1, 1)).days)
    if item.calculator_id == GESTATIONAL_AGE:
        weeks, days = parse_age(answer)
        return float(weeks * 7 + days)
    value = float(answer)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {answer!r}")
    return value


def squared_error(item: CalcItem, answer: str) -> float:
    """(candidate − gold)², or +inf for an answer that cannot be read (the worst rank)."""
    try:
        return (encode(item, answer) - encode(item, item.answer)) ** 2
    except ValueError:
        return math.inf


def medcalc_correct(item: CalcItem, answer: str) -> bool:
    """MedCalc-Bench's rule: decimals within [lower, upper], integers exact after rounding, dates exact,
    gestational age an exact (weeks, days) pair."""
    try:
        if item.calculator_id in DATE_CALCULATORS:
            return parse_date(answer) == parse_date(item.answer)
        if item.calculator_id == GESTATIONAL_AGE:
            return parse_age(answer) == parse_age(item.answer)
        value = float(answer)
        if item.output_type == "integer":
            return round(value) == round(float(item.answer))
        low, high = sorted((float(item.lower), float(item.upper)))
        return low <= value <= high
    except ValueError:
        return False


def exact_match(candidate: str, gold: str) -> float:
    return 1.0 if candidate.strip().lower() == gold.strip().lower() else 0.0
