r"""English word tools: words, stems, content words, clauses, negation, sentences, matching keys.

One definition of each, read by every stage that looks at words (the lexical grader, the Controller's
grounding audit, the leak and fact-coverage audits, the rubric lint, the offline curation baseline,
the evidence query). Where stages read words differently, the difference is a named parameter, not a
copy:

- `stem`: a crude stem. By default the lexical grader's (keys, the rubric lint, the Controller's
  quote check): "'s" dropped, then the first of "ing", "ed", "es", "s" whose removal leaves 4
  letters, then the first 6 letters. The leak audit keeps 7 letters, allows 3-letter stems and drops
  "ly" too (`min_stem=3, keep=7, ly=True`); grounding keeps the whole stem and reads "-ies" as
  "-y" (`min_stem=3, keep=None, ly=True, ies=True`).
- `content_words`: the words that carry meaning, in order; by default not a stop word, rubric
  boilerplate or negation cue (`word_tables.STOPWORDS | BOILERPLATE | NEGATIONS`) and 2 letters or
  more. Callers name their own stop list (`skip`), shortest word (`shortest`) and whether a number
  of one digit counts (`numbers`), and stem the result if they match stems.
- `negated`: a clause with an odd number of negation cues (`word_tables.NEGATIONS`, any "n't";
  "allergic to X" is a cue, "allergic reaction" is not): "stop X" is negated, "do not stop X" is not.
- `sentences`: prose cut after ".", "!" or "?" (a closing quote or bracket after the mark goes with
  the break) and at line breaks; `cut="passages"` is the lexical grader's reading (a semicolon ends a
  passage too, and a mark ends one only when whitespace follows it), `cut="capitals"` K-QA answers'
  (a mark ends a sentence only before a capital or a digit: "e.g. the" stays whole).
  `sentence_spans` is retrieval's reading, as (start, end) places in the text, for snippets: the pieces
  of `re.split(r"(?<=[.!?])\s+", text)`, found with `str.find`.
- `key`: a word's matching key (synonyms and brand names folded, British spelling folded, stemmed);
  `overlap`: the share of one text's content words (stemmed) another holds, spelling variants included.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import Literal

from livemed.common.word_tables import BOILERPLATE, NEGATIONS, STOPWORDS, SYNONYMS, american

SKIP = STOPWORDS | BOILERPLATE | NEGATIONS  # what `content_words` leaves out by default
WORD_RATIO = 85.0  # `overlap`: two stems this similar (rapidfuzz ratio) are one word spelt two ways

_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")
_CLAUSE = re.compile(r"[,;:]\s*|\s+but\s+")
_REACTION = frozenset({"reaction", "reactions", "rhinitis", "symptoms", "response"})
# after a sentence's ".", "!" or "?", any closing quotes or brackets, then whitespace; or line breaks
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
Cut = Literal["prose", "passages", "capitals"]
_ENDS: dict[str, re.Pattern[str]] = {
    "prose": SENTENCE_END,
    "passages": re.compile(r"(?<=[.!?;])\s+|\n+"),
    "capitals": re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])|\n+"),
}

_BASE_SUFFIXES = ("ing", "ed", "es", "s")
_SUFFIXES = {
    (ly, ies): ("ies",) * ies + _BASE_SUFFIXES + ("ly",) * ly for ly in (False, True) for ies in (False, True)
}


def words(text: str) -> list[str]:
    """Lower-case words: letters and digits, with inner apostrophes and hyphens ("don't", "follow-up")."""
    return _WORD.findall(text.lower())


def stem(word: str, *, min_stem: int = 4, keep: int | None = 6, ly: bool = False, ies: bool = False) -> str:
    """A crude stem: "'s" dropped, then the first suffix of "ing", "ed", "es", "s" (and "ly" with `ly`;
    "ies", read as "y", first with `ies`) whose removal leaves at least `min_stem` letters, then the
    first `keep` letters (all with None): 'checked', 'checking' → 'check'."""
    word = word.removesuffix("'s")
    for suffix in _SUFFIXES[ly, ies]:
        if len(word) - len(suffix) >= min_stem and word.endswith(suffix):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word if keep is None else word[:keep]


def content_words(
    words: Iterable[str], *, skip: Collection[str] = SKIP, shortest: int = 2, numbers: bool = False
) -> list[str]:
    """The words that carry meaning, in order: not in `skip` and at least `shortest` letters long (any
    number too, with `numbers`: "5")."""
    return [w for w in words if w not in skip and (len(w) >= shortest or (numbers and w.isdigit()))]


def clauses(text: str) -> list[str]:
    """`text` cut where `negated` reads one clause from the next (a comma, semicolon, colon, "but")."""
    return [part for part in _CLAUSE.split(text) if part.strip()]


def _cue(tokens: list[str], i: int) -> bool:
    """A negation cue; "allergic reaction" (a side effect) is not one, "allergic to X" is."""
    token = tokens[i]
    if token.startswith("allerg"):
        return token in NEGATIONS and (i + 1 == len(tokens) or tokens[i + 1] not in _REACTION)
    return token in NEGATIONS or token.endswith("n't")


def negated(text: str) -> bool:
    """A clause with an odd number of negation cues: "stop X" is negated, "do not stop X" is not."""
    for clause in clauses(text):
        tokens = words(clause)
        if sum(_cue(tokens, i) for i in range(len(tokens))) % 2 == 1:
            return True
    return False


def sentences(text: str, *, cut: Cut = "prose") -> list[str]:
    """`text`'s sentences, stripped, none empty; always cut at line breaks, and

    - `prose`: after ".", "!" or "?" and the closing quotes or brackets after it (`SENTENCE_END`);
    - `passages` (the lexical grader's): after ".", "!", "?" or ";" where whitespace follows it;
    - `capitals` (K-QA answers): after ".", "!" or "?" where whitespace and a capital or digit follow."""
    return [s for s in (part.strip() for part in _ENDS[cut].split(text)) if s]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    r"""Where the pieces of `re.split(r"(?<=[.!?])\s+", text)` are in `text` (start, end), found
    without a regular expression looking at every character: `str.find` of each of `.`, `!`, `?` (a
    C loop), then the whitespace after it (`str.isspace` is the regular expressions' `\s` for `str`)."""
    marks: list[int] = []
    for char in ".!?":
        at = text.find(char)
        while at != -1:
            marks.append(at)
            at = text.find(char, at + 1)
    size = len(text)
    if not marks:
        return [(0, size)]
    marks.sort()
    spans: list[tuple[int, int]] = []
    start = 0
    for mark in marks:
        gap = mark + 1
        if mark < start or gap == size or not text[gap].isspace():
            continue
        end = gap + 1
        while end < size and text[end].isspace():
            end += 1
        spans.append((start, gap))
        start = end
    spans.append((start, size))
    return spans


@lru_cache(maxsize=1 << 16)
def key(word: str) -> str:
    """A word's matching key: synonyms and brand names folded, British spelling folded, stemmed."""
    return stem(american(SYNONYMS.get(word, word)))


def overlap(needle: str, haystack: str) -> float:
    """Share of `needle`'s content words (stemmed) found in `haystack`, spelling variants included."""
    from rapidfuzz import fuzz  # imported here: the grader and the answer path never need it

    want = {stem(w) for w in content_words(words(needle))}
    if not want:
        return 0.0
    have = {stem(w) for w in content_words(words(haystack))}
    hits = sum(1 for w in want if w in have or any(fuzz.ratio(w, h) >= WORD_RATIO for h in have))
    return hits / len(want)
