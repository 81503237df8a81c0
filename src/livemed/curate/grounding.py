"""Deterministic grounding: find an element's text in the source with fuzzy matching on normalised text.

Normalisation lower-cases, folds Unicode (NFKC), turns punctuation into spaces and collapses runs of
whitespace, keeping a map back to the original characters so the matched source span can be stored.

A high fuzzy score is not enough: a flipped meaning ("Do take ibuprofen" against "Do not take ibuprofen",
"bacterial" against "viral") scores above 90. So every content word of the element must appear in the
matched span (simple inflections allowed), and the element and the matched source text (with the two
words before it in the same sentence) must agree on negation (`common.text.negated`: an odd number
of negation cues in a clause).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from rapidfuzz import fuzz

from livemed.common.numbers import numbers
from livemed.common.text import content_words, negated, stem
from livemed.common.word_tables import FUNCTION_WORDS, NORMALISED_NEGATIONS

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
        return _polarity_checked(_match(100.0, exact.start(), exact.end(), hay, source), element, source)
    if len(needle.split()) <= SHORT_WORDS or len(needle) > len(hay.text):
        return Match(fuzz.ratio(needle, hay.text) if len(needle) > len(hay.text) else 0.0, None, None, None)
    aligned = fuzz.partial_ratio_alignment(needle, hay.text)
    if aligned is None:
        return Match(0.0, None, None, None)
    lo, hi = _widen(hay.text, aligned.dest_start, aligned.dest_end)
    found = _match(aligned.score, lo, hi, hay, source)
    wanted = numbers(needle)
    if wanted and not wanted <= numbers(hay.text[lo:hi]):
        return Match(min(found.score, 50.0), None, None, None)
    if not covers(hay.text[lo:hi], needle):
        return Match(min(found.score, 50.0), None, None, None)
    return _polarity_checked(found, element, source)


_SKIP = FUNCTION_WORDS | NORMALISED_NEGATIONS  # not what an element says: `covers` does not look for them
_TOKEN = re.compile(r"[\w'’]+")
_SENTENCE_END = re.compile(r"[.!?;:\n]")
CONTEXT_WORDS = 2


def _widen(text: str, lo: int, hi: int) -> tuple[int, int]:
    """Extends a character range of normalised text to whole words."""
    while lo > 0 and text[lo - 1] != " ":
        lo -= 1
    while hi < len(text) and text[hi] != " ":
        hi += 1
    return lo, hi


def _same_word(a: str, b: str) -> bool:
    """One word up to inflection: the same stem (whole, "-ies" read as "-y"), or one stem (4 letters or
    more) starting the other."""
    sa, sb = (stem(w, min_stem=3, keep=None, ly=True, ies=True) for w in (a, b))
    if sa == sb:
        return True
    return min(len(sa), len(sb)) >= 4 and (sa.startswith(sb) or sb.startswith(sa))


def covers(span: str, needle: str) -> bool:
    """Every content word of `needle` (normalised) appears in `span` (normalised), up to inflection."""
    words = set(span.split())
    wanted = content_words(needle.split(), skip=_SKIP, shortest=1)
    return all(w in words or any(_same_word(w, other) for other in words) for w in wanted)


def _polarity_checked(found: Match, element: str, source: str) -> Match:
    """Ungrounded when exactly one of the element and the matched source text (with context) is negated."""
    if found.start is None or found.end is None:
        return found
    before = _SENTENCE_END.split(source[: found.start])[-1]
    context = " ".join(_TOKEN.findall(before)[-CONTEXT_WORDS:])
    if negated(element) != negated(f"{context} {source[found.start : found.end]}"):
        return Match(min(found.score, 50.0), None, None, None)
    return found


def _match(score: float, lo: int, hi: int, hay: Normalised, source: str) -> Match:
    if hi <= lo:
        return Match(score, None, None, None)
    start, end = hay.origin[lo], hay.origin[hi - 1] + 1
    return Match(score, start, end, source[start:end])
