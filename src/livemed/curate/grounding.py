"""Deterministic grounding: find an element's text in the source with fuzzy matching on normalised text.

Normalisation lower-cases, folds Unicode (NFKC), turns punctuation into spaces and collapses runs of
whitespace, keeping a map back to the original characters so the matched source span can be stored.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz import fuzz

_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Normalised:
    text: str
    origin: list[int]  # origin[i] = index in the original text of normalised character i


def normalise(text: str) -> Normalised:
    """Lower-cased, punctuation-free, single-spaced text with a map back to the original indices."""
    chars: list[str] = []
    origin: list[int] = []
    for index, raw in enumerate(text):
        for char in unicodedata.normalize("NFKC", raw).lower():
            if _WORD.match(char):
                chars.append(char)
                origin.append(index)
            elif chars and chars[-1] != " ":
                chars.append(" ")
                origin.append(index)
    while chars and chars[-1] == " ":
        chars.pop()
        origin.pop()
    return Normalised("".join(chars), origin)


@dataclass(frozen=True)
class Match:
    score: float
    start: int | None
    end: int | None
    span: str | None


SHORT_WORDS = 3
_NUMBER = re.compile(r"\d+")


def locate(element: str, source: str, normalised_source: Normalised | None = None) -> Match:
    """The best match of `element` in `source`: score 0-100 and the original source span.

    Whole words match exactly (score 100). Short elements (up to three words) must match exactly;
    longer ones may match fuzzily (rapidfuzz partial ratio), but never with a different number, so a
    changed dose or duration is not grounded.
    """
    needle = normalise(element).text
    hay = normalised_source or normalise(source)
    if not needle or not hay.text:
        return Match(0.0, None, None, None)
    exact = re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", hay.text)
    if exact:
        return _match(100.0, exact.start(), exact.end(), hay, source)
    if len(needle.split()) <= SHORT_WORDS or len(needle) > len(hay.text):
        return Match(fuzz.ratio(needle, hay.text) if len(needle) > len(hay.text) else 0.0, None, None, None)
    aligned = fuzz.partial_ratio_alignment(needle, hay.text)
    if aligned is None:
        return Match(0.0, None, None, None)
    found = _match(aligned.score, aligned.dest_start, aligned.dest_end, hay, source)
    numbers = set(_NUMBER.findall(needle))
    if numbers and not numbers <= set(_NUMBER.findall(hay.text[aligned.dest_start : aligned.dest_end])):
        return Match(min(found.score, 50.0), None, None, None)
    return found


def _match(score: float, lo: int, hi: int, hay: Normalised, source: str) -> Match:
    if hi <= lo:
        return Match(score, None, None, None)
    start, end = hay.origin[lo], hay.origin[hi - 1] + 1
    return Match(score, start, end, source[start:end])
