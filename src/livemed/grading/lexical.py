"""`offline/lexical`: a no-LLM grader baseline — negation-aware sentence matching.

A criterion is met when one sentence of the response contains most of the criterion's content
words (after dropping stopwords and rubric boilerplate such as "the response mentions") *and*
agrees with it on negation, judged by the parity of negation cues in each clause (a text is negated
when one of its clauses is): "avoid ibuprofen" does not meet "recommends ibuprofen", "stop the
medicine" does not meet "advises not stopping the medicine", "do not stop the medicine" does, and
"avoid screens, and avoid alcohol" stays negated. Naming an allergy ("your penicillin allergy",
"allergic to penicillin") counts as a negation cue: it contraindicates the drug, it does not
recommend it. For a negative criterion, met means the bad statement
is present, exactly as for an LLM judge. It is a baseline: it sees words, not meaning, and its
agreement with human labels is measured like any other grader's.
"""

from __future__ import annotations

import re

from livemed.grading.offline import OfflineBaseline

MATCH_THRESHOLD = 0.6


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


NEGATIONS = _set(
    "not no never avoid avoids avoided avoiding without don't dont doesn't shouldn't mustn't cannot can't "
    "stop stopping neither nor none refrain discontinue allergy allergies allergic"
)
STOPWORDS = _set(
    "a an the and or of to in on for with at by from as is are be been being it its this that these those "
    "your you yours patient patient's their they them he she his her if then than so such any all some "
    "should would could can may might must will shall do does did has have had about into over under very "
    "more most less also only just e.g i.e etc per which who whom what when where how why"
)
BOILERPLATE = _set(
    "response model answer reply assistant mentions mention mentioned mentioning states state stated says "
    "advises advise advised recommends recommend recommended recommending suggests suggest suggested "
    "includes include including explains explain explained notes note tells tell told informs inform "
    "correctly clearly explicitly appropriately identifies identify discusses discuss provides provide "
    "indicates indicate encourages encourage user"
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def stem(word: str) -> str:
    """A crude stem: common suffixes dropped, then the first 6 letters ('checked', 'checking' → 'check')."""
    word = word.removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:6]


def content(text: str) -> set[str]:
    skip = STOPWORDS | BOILERPLATE | NEGATIONS
    return {stem(w) for w in words(text) if w not in skip and len(w) > 1}


_CLAUSE = re.compile(r"[,;:]\s*|\s+but\s+")


def _odd_cues(clause: str) -> bool:
    return sum(t in NEGATIONS or t.endswith("n't") for t in words(clause)) % 2 == 1


def negated(text: str) -> bool:
    """A clause with an odd number of negation cues: "stop X" is negated, "do not stop X" is not."""
    return any(_odd_cues(clause) for clause in _CLAUSE.split(text))


def sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in _SENTENCE.split(text)) if s]


def match(response: str, criterion: str, threshold: float = MATCH_THRESHOLD) -> tuple[bool, str]:
    """(met, explanation): the best sentence's share of criterion content words, negation-checked."""
    wanted = content(criterion)
    if not wanted:
        return False, "criterion has no content words to match"
    want_negated = negated(criterion)
    best, best_sentence = 0.0, ""
    for sentence in sentences(response):
        if negated(sentence) != want_negated:
            continue
        share = len(wanted & content(sentence)) / len(wanted)
        if share > best:
            best, best_sentence = share, sentence
    if best >= threshold:
        return True, f"{best:.0%} of the criterion's words in: {best_sentence[:160]!r}"
    return False, f"best matching sentence has {best:.0%} of the criterion's words (needs {threshold:.0%})"


class LexicalGrader(OfflineBaseline):
    """The lexical grader baseline (`offline/lexical`)."""

    name = "lexical"

    def __init__(self, threshold: float = MATCH_THRESHOLD) -> None:
        self.threshold = threshold

    def judge(self, response: str, criterion: str) -> tuple[bool, str]:
        return match(response, criterion, self.threshold)
