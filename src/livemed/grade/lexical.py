"""`offline/lexical`: a no-LLM grader baseline — negation-aware, weighted word matching.

A criterion is met when a passage of the response (one sentence, or two in a row) holds at least
`MATCH_THRESHOLD` of the criterion's content-word weight *and* agrees with it on negation.
Words are folded before matching (`common.text.key`, with `common/word_tables.py`: brand names to
the generic drug, British spelling, plural abbreviations, a few lay ↔ clinical words; then a crude
stem), and weighted: a drug or a number counts most, words common to every medical statement
("treatment", "symptoms") least, and a word the response repeats in many sentences (its topic) counts
less for each one, so a statement is not met on its topic alone. A drug the criterion names and the
response does not, or a number it states where the response gives other numbers, is a mismatch: not
met.

Negation is judged by the parity of negation cues in each clause (`common.text.negated`): the
criterion is negated when one of its clauses is, a passage when one of the clauses that carry the
match is. "avoid ibuprofen" does not meet "recommends ibuprofen", "stop the medicine" does not meet
"advises not stopping the medicine", "do not stop the medicine" does, and "avoid screens, and avoid
alcohol" stays negated. Naming an
allergy ("your penicillin allergy", "allergic to penicillin") counts as a negation cue: it
contraindicates the drug, it does not recommend it ("allergic reaction", a side effect, does not).
For a negative criterion, met means the bad statement is present, exactly as for an LLM judge. It is
a baseline: it sees words, not meaning, and its agreement with human labels is measured like any other
grader's (docs/benchmarks.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from livemed.common.text import clauses, content_words, key, negated, sentences
from livemed.common.word_tables import DRUGS, GENERIC, SYNONYMS
from livemed.models.base import OfflineBaseline

MATCH_THRESHOLD = 0.45  # calibrated on the K-QA dev split and the dev half of K-QA's physician labels
WINDOW = 2  # consecutive sentences a criterion may be spread over
DRUG_WEIGHT, NUMBER_WEIGHT, GENERIC_WEIGHT = 2.0, 1.5, 0.4
TOPIC_DAMPING = 1.0


_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?(?:'[a-z]+)?")


def _tokens(text: str) -> list[str]:
    """The grader's words: a decimal ("2.5") and a clitic ("patient's") stay whole."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class _Clause:
    keys: frozenset[str]
    negated: bool


@dataclass(frozen=True)
class _Prepared:
    """A response cut into sentences of clauses, with its keys (folded, stemmed content words)."""

    sentences: tuple[tuple[_Clause, ...], ...]
    texts: tuple[str, ...]
    keys: frozenset[str]
    damping: dict[str, float]  # key -> (sentences holding it) ** -TOPIC_DAMPING: the topic counts less
    # every passage (first sentence, its clauses, their keys), in `_windows`' order: made once per
    # response, not once per criterion graded on it
    spans: tuple[tuple[int, tuple[_Clause, ...], frozenset[str]], ...] = ()
    numbers: frozenset[str] = frozenset()  # the keys that are numbers


def weight(word: str) -> float:
    """How much a criterion word counts: drugs and numbers most, words common to all statements least."""
    canonical = SYNONYMS.get(word, word)
    if canonical in DRUGS:
        return DRUG_WEIGHT
    if canonical[0].isdigit():
        return NUMBER_WEIGHT
    return GENERIC_WEIGHT if canonical in GENERIC else 1.0


def terms(text: str) -> dict[str, float]:
    """A criterion's keys with their weights (the highest weight when two words share a key)."""
    wanted: dict[str, float] = {}
    for word in content_words(_tokens(text), numbers=True):
        k = key(word)
        wanted[k] = max(wanted.get(k, 0.0), weight(word))
    return wanted


def _clauses(text: str) -> tuple[_Clause, ...]:
    return tuple(
        _Clause(frozenset(key(w) for w in content_words(_tokens(c), numbers=True)), negated(c))
        for c in clauses(text)
    )


@lru_cache(maxsize=512)
def prepare(response: str) -> _Prepared:
    texts = tuple(sentences(response, cut="passages"))
    parsed = tuple(_clauses(sentence) for sentence in texts)
    spread: dict[str, int] = {}
    for sentence in parsed:
        for k in frozenset().union(*(c.keys for c in sentence)):
            spread[k] = spread.get(k, 0) + 1
    spans = tuple(
        (start, clauses, frozenset().union(*(c.keys for c in clauses)))
        for start in range(len(parsed))
        for clauses in _spans(parsed, start)
    )
    damping = {k: n**-TOPIC_DAMPING for k, n in spread.items()}
    numbers = frozenset(k for k in spread if k[0].isdigit())
    return _Prepared(parsed, texts, frozenset(spread), damping, spans, numbers)


@dataclass(frozen=True)
class _Criterion:
    """What matching needs of a criterion: its weighted keys, its clauses, the word behind each key."""

    wanted: dict[str, float]
    clauses: tuple[_Clause, ...]
    names: dict[str, str]
    drugs: tuple[str, ...] = ()  # the keys weighted as drugs
    numbers: tuple[str, ...] = ()  # the keys weighted as numbers


@lru_cache(maxsize=4096)
def _criterion(text: str) -> _Criterion:
    """A criterion prepared once: every answer to a case is graded on the same criteria."""
    names = {key(w): SYNONYMS.get(w, w) for w in content_words(_tokens(text), numbers=True)}
    wanted = terms(text)
    drugs = tuple(k for k, w in wanted.items() if w == DRUG_WEIGHT)
    numbers = tuple(k for k, w in wanted.items() if w == NUMBER_WEIGHT)
    return _Criterion(wanted, _clauses(text), names, drugs, numbers)


def _mismatch(criterion: _Criterion, response: _Prepared) -> str:
    """A drug or number the criterion names and the response does not (numbers: when it has any)."""
    drugs = [criterion.names[k] for k in criterion.drugs if k not in response.keys]
    if drugs:
        return f"the criterion names {', '.join(sorted(drugs))}, the response does not"
    numbers = response.numbers
    missing = [k for k in criterion.numbers if k not in numbers] if numbers else []
    if missing:
        return f"the criterion says {', '.join(sorted(missing))}, the response gives other numbers"
    return ""


def _windows(response: _Prepared, wanted: dict[str, float], own: tuple[_Clause, ...]) -> tuple[float, int]:
    """The best share of criterion weight in up to WINDOW consecutive sentences that agree on negation."""
    wanted = {k: w * response.damping.get(k, 1.0) for k, w in wanted.items()}
    total = sum(wanted.values())
    best, where = 0.0, -1
    found = [(k, w) for k, w in wanted.items() if k in response.keys]  # a passage holds only these
    for start, passage, keys in response.spans if found else ():
        share = sum(w for k, w in found if k in keys) / total
        if share <= best:
            continue
        if _agree(own, passage, wanted):
            best, where = share, start
    return best, where


def _agree(own: tuple[_Clause, ...], clauses: tuple[_Clause, ...], wanted: dict[str, float]) -> bool:
    """Each clause of the criterion agrees on negation with the passage clause that matches it best.

    "X is not Y" is not met by "X is Y. Z is not W": its clause's best match, "X is Y", is not negated."""
    for mine in own:
        overlap = [sum(wanted.get(k, 0.0) for k in mine.keys & c.keys) for c in clauses]
        best = max(overlap, default=0.0)
        if best > 0 and clauses[overlap.index(best)].negated != mine.negated:
            return False
    return True


def _spans(parsed: tuple[tuple[_Clause, ...], ...], start: int) -> list[tuple[_Clause, ...]]:
    return [
        tuple(c for sentence in parsed[start : start + size] for c in sentence)
        for size in range(1, WINDOW + 1)
        if start + size <= len(parsed)
    ]


def match(response: str, criterion: str, threshold: float = MATCH_THRESHOLD) -> tuple[bool, str]:
    """(met, explanation): the best window's weighted share of criterion words, negation-checked."""
    prepared_criterion = _criterion(criterion)
    wanted = prepared_criterion.wanted
    if not wanted:
        return False, "criterion has no content words to match"
    prepared = prepare(response)
    mismatch = _mismatch(prepared_criterion, prepared)
    if mismatch:
        return False, mismatch
    best, where = _windows(prepared, wanted, prepared_criterion.clauses)
    if best >= threshold:
        return True, f"{best:.0%} of the criterion's words in: {prepared.texts[where][:160]!r}"
    return False, f"best matching passage has {best:.0%} of the criterion's words (needs {threshold:.0%})"


class LexicalGrader(OfflineBaseline):
    """The lexical grader baseline (`offline/lexical`)."""

    name = "lexical"

    def __init__(self, threshold: float = MATCH_THRESHOLD) -> None:
        self.threshold = threshold

    def judge(self, response: str, criterion: str) -> tuple[bool, str]:
        return match(response, criterion, self.threshold)
