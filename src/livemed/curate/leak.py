"""The leak audit: does the case a candidate is shown already state the answer?

For every curated case, whatever made it (an LLM or the rule-based baseline), each advice element is
compared with the text the candidate model reads (`curate.view.candidate_view`: the one definition
the answer stage sends too, so the audit sees exactly what the model sees; the patient template's own
labels such as "Medicines I take:" are not counted). Both are normalised (NFKC, lower case,
punctuation dropped) and stemmed; an element's **leak** is the share of its content words that the
prompt states inside a run of shared words holding at least two content words (so a word that merely
recurs, "pain" or "doctor", does not count, while "she continued apixaban" against "…such as
apixaban" does not either unless the words run together; words that are never the answer, `NEVER_THE_ANSWER`
— "diagnosis", "likely", "final" — are not content here, so "the most likely diagnosis is X" does not
leak through a derived query's "What is the most likely diagnosis?"). The longest shared runs are
kept as the evidence. A case whose highest element leak is above `[thresholds] answer_leak` is
rejected as `answer_leak` (stage "controller", the final audit), the overlapping spans in the
rejection's detail.

A diagnostic case (`sections.is_diagnostic`) is also rejected when its final diagnosis shows: the
answer an advice element names after one of the domain pack's `[leak] answer_cues` ("the final
diagnosis was cutaneous sarcoidosis" → "cutaneous sarcoidosis") has more than the threshold's share
of its content words anywhere in the candidate's view but the query (single words count:
"sarcoidosis" alone gives it away; the asker's own guess, "Is this shingles?", does not).
`leak_findings` says whether a case leaks and why; the threshold was tuned on a labelled dev set
(`tests/fixtures/leak/dev.jsonl`, `benchmarks/leak_threshold.py`, docs/prompts.md).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from livemed.common.text import content_words, stem
from livemed.common.word_tables import FUNCTION_WORDS
from livemed.curate.screener import reject
from livemed.curate.sections import is_diagnostic
from livemed.curate.view import audit_text
from livemed.domains import DomainPack, medical
from livemed.records import Case, Doc, Rejection

STAGE = "controller"  # the final audit: a leak is rejected where ungrounded elements are
MIN_RUN_CONTENT = 2  # a shared run must hold this many content words to count
_WORD = re.compile(r"[a-z0-9]+")
# English function words, negations and a few quantifiers: what is never the content of an element
_STOP_TEXT = (
    "not no don doesn isn more most such which who what when where how why all each other only own same "
    "too both again further once"
)
_STOP = FUNCTION_WORDS | frozenset(_STOP_TEXT.split())
# the audit's stem: 3 letters may be a stem, "-ly" goes too, the first 7 letters are kept
_stem = partial(stem, min_stem=3, keep=7, ly=True)


def tokens(text: str) -> list[str]:
    """Normalised words: NFKC, lower case, letters and digits only."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


@dataclass(frozen=True)
class ElementLeak:
    advice_index: int
    leak: float  # share of the element's content words stated by the prompt in shared runs
    spans: list[str] = field(default_factory=list)  # the longest shared runs, longest first

    def describe(self) -> str:
        spans = "; ".join(repr(s) for s in self.spans[:3]) or "none"
        return f"advice #{self.advice_index} leak {self.leak:.2f} (shared: {spans})"


def shared_runs(element: list[str], prompt: list[str]) -> list[tuple[int, int]]:
    """Maximal runs element[i:j] that also occur in `prompt` (word for word, stemmed), as (i, j)."""
    stems_p = [_stem(w) for w in prompt]
    stems_e = [_stem(w) for w in element]
    best = [0] * (len(stems_p) + 1)
    runs: dict[int, int] = {}  # end index in the element -> longest run ending there
    for i in range(1, len(stems_e) + 1):
        row = [0] * (len(stems_p) + 1)
        for j in range(1, len(stems_p) + 1):
            if stems_e[i - 1] == stems_p[j - 1]:
                row[j] = best[j - 1] + 1
                runs[i] = max(runs.get(i, 0), row[j])
        best = row
    found = [(end - length, end) for end, length in runs.items()]
    return [(i, j) for i, j in found if not any(a <= i and j <= b and (a, b) != (i, j) for a, b in found)]


# Words that never are the answer: a derived query's "the most likely diagnosis" shared with the
# element that answers it is not a leak; nor, in a named diagnosis, a qualifier ("acute gout": "gout").
NEVER_THE_ANSWER = frozenset(
    map(
        _stem,
        [
            "diagnosis",
            "diagnosed",
            "likely",
            "probable",
            "probably",
            "possible",
            "possibly",
            "final",
            "patient",
            "case",
        ],
    )
)
QUALIFIERS = frozenset(
    map(_stem, ["acute", "chronic", "mild", "moderate", "severe", "disease", "syndrome", "disorder"])
)


def _meaning(words: list[str]) -> set[str]:
    """The stems of the words' content, less the words that are never the answer."""
    return {_stem(w) for w in content_words(words, skip=_STOP, shortest=1)} - NEVER_THE_ANSWER


def element_leak(index: int, element: str, prompt_words: list[str]) -> ElementLeak:
    words = tokens(element)
    wanted = _meaning(words)
    if not wanted:
        return ElementLeak(index, 0.0)
    runs = [
        (i, j) for i, j in shared_runs(words, prompt_words) if len(_meaning(words[i:j])) >= MIN_RUN_CONTENT
    ]
    stated = set().union(*(_meaning(words[i:j]) for i, j in runs)) if runs else set()
    spans = [" ".join(words[i:j]) for i, j in sorted(runs, key=lambda r: r[0] - r[1])]
    return ElementLeak(index, round(len(stated & wanted) / len(wanted), 4), spans)


def audit(case: Case, pack: DomainPack | None = None) -> list[ElementLeak]:
    """Every advice element's leak into what the candidate is shown, in advice order."""
    prompt = tokens(audit_text(case, pack))
    return [element_leak(i, element, prompt) for i, element in enumerate(case.advice)]


def worst(leaks: list[ElementLeak]) -> ElementLeak | None:
    return max(leaks, key=lambda leak: leak.leak, default=None)


_ANSWER_END = re.compile(
    r"[,.;:()\[\]!?]|\s(?:which|that|who|because|given|as|since|after|on|in|at|with|without|and|or|but"
    r"|from|by|using|based)\s",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:(?:a|an|the|of|to be|be|is|was|has|had)\s+)+", re.IGNORECASE)


def named_answer(element: str, pack: DomainPack | None = None) -> str | None:
    """The answer an advice element names after the pack's `[leak] answer_cues` ("the diagnosis is
    X, given…" → "X"): the latest cue's, up to the end of its clause; None without a cue."""
    found: list[tuple[int, str]] = []
    for cue in (pack or medical()).leak.answer_cues:
        for match in re.finditer(rf"\b(?:{cue})\s*", element, re.IGNORECASE):
            rest = _ARTICLE.sub("", element[match.end() :])
            answer = _ANSWER_END.split(f"{rest} ", maxsplit=1)[0].strip()
            if _meaning(tokens(answer)) - QUALIFIERS:
                found.append((match.end(), answer))
    return max(found)[1] if found else None


def diagnosis_leak(index: int, answer: str, view: set[str]) -> ElementLeak:
    """The share of the named answer's content words that the candidate's view holds, anywhere."""
    wanted = _meaning(tokens(answer)) - QUALIFIERS
    shown = sorted(wanted & view)
    return ElementLeak(index, round(len(shown) / len(wanted), 4), [answer, *shown])


LeakKind = Literal["advice", "diagnosis"]


@dataclass(frozen=True)
class LeakFinding:
    """Why a case leaks: an advice element the view restates (`advice`), or a diagnostic case's final
    diagnosis in the view (`diagnosis`), with its leak and the shared words."""

    kind: LeakKind
    leak: ElementLeak

    def describe(self) -> str:
        if self.kind == "advice":
            return self.leak.describe()
        answer, *shown = self.leak.spans
        return (
            f"diagnosis {answer!r} (advice #{self.leak.advice_index}) shown {self.leak.leak:.2f}"
            f" (words: {', '.join(shown)})"
        )


def leak_scores(case: Case, pack: DomainPack | None = None) -> list[LeakFinding]:
    """Every advice element's leak and, for a diagnostic case, every named diagnosis's (`named_answer`)."""
    view = tokens(audit_text(case, pack))
    scores = [LeakFinding("advice", element_leak(i, a, view)) for i, a in enumerate(case.advice)]
    if is_diagnostic(case, pack):
        # the asker's own guess in the question ("Is this shingles?") is fair: the candidate must still judge
        words = _meaning(tokens(audit_text(case.model_copy(update={"query": " "}), pack)))
        for i, element in enumerate(case.advice):
            if (answer := named_answer(element, pack)) is not None:
                scores.append(LeakFinding("diagnosis", diagnosis_leak(i, answer, words)))
    return scores


def leak_findings(case: Case, pack: DomainPack | None = None, *, max_leak: float) -> list[LeakFinding]:
    """Whether the case gives its answer away, and why: the findings whose leak is above `max_leak`
    (none: it does not leak). Pure: it reads the case and the pack only."""
    return [finding for finding in leak_scores(case, pack) if finding.leak.leak > max_leak]


def check(case: Case, doc: Doc, max_leak: float, pack: DomainPack | None = None) -> Case | Rejection:
    """The case, or an `answer_leak` rejection (the findings in its detail) when `leak_findings` finds
    any."""
    over = [finding.describe() for finding in leak_findings(case, pack, max_leak=max_leak)]
    if not over:
        return case
    detail = f"the prompt already states the answer (leak > {max_leak:.2f}): " + " | ".join(over)
    return reject(doc, "answer_leak", detail[:2000], stage=STAGE)
