"""The leak audit: does the case a candidate is shown already state the answer?

For every curated case, whatever made it (an LLM or the rule-based baseline), each advice element is
compared with the text the candidate model reads (`grading.view.candidate_view`: the one definition
the answer stage sends too, so the audit sees exactly what the model sees; the patient template's
own labels such as "Medicines I take:" are not counted). Both are normalised (NFKC, lower case,
punctuation dropped) and stemmed; an element's **leak** is the share of its content words that the
prompt states inside a run of shared words holding at least two content words (so a word that merely
recurs, "pain" or "doctor", does not count, while "she continued apixaban" against "…such as
apixaban" does not either unless the words run together). The longest shared runs are kept as the
evidence. A case whose highest element leak is above `[thresholds] answer_leak` is rejected as
`answer_leak` (stage "controller", the final audit), the overlapping spans in the rejection's
detail.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from livemed.curate.screener import reject
from livemed.domains import DomainPack
from livemed.grading.view import audit_text
from livemed.records import Case, Doc, Rejection

STAGE = "controller"  # the final audit: a leak is rejected where ungrounded elements are
MIN_RUN_CONTENT = 2  # a shared run must hold this many content words to count
_WORD = re.compile(r"[a-z0-9]+")
_STOP_TEXT = (
    "a an the and or but if of to in on at by for from with as is are was were be been being am do does "
    "did have has had i you he she it we they me him her us them my your his its our their this that "
    "these those there here so than then very just also any some can could should would will may might "
    "must shall about into over after before up out get got s t not no don doesn isn more most such "
    "which who what when where how why all each other only own same too both again further once"
)
_STOP = frozenset(_STOP_TEXT.split())
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:7]


def tokens(text: str) -> list[str]:
    """Normalised words: NFKC, lower case, letters and digits only."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def content(words: list[str]) -> set[str]:
    return {stem(w) for w in words if w not in _STOP}


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
    stems_p = [stem(w) for w in prompt]
    stems_e = [stem(w) for w in element]
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


def element_leak(index: int, element: str, prompt_words: list[str]) -> ElementLeak:
    words = tokens(element)
    wanted = content(words)
    if not wanted:
        return ElementLeak(index, 0.0)
    runs = [
        (i, j) for i, j in shared_runs(words, prompt_words) if len(content(words[i:j])) >= MIN_RUN_CONTENT
    ]
    stated = set().union(*(content(words[i:j]) for i, j in runs)) if runs else set()
    spans = [" ".join(words[i:j]) for i, j in sorted(runs, key=lambda r: r[0] - r[1])]
    return ElementLeak(index, round(len(stated & wanted) / len(wanted), 4), spans)


def audit(case: Case, pack: DomainPack | None = None) -> list[ElementLeak]:
    """Every advice element's leak into what the candidate is shown, in advice order."""
    prompt = tokens(audit_text(case, pack))
    return [element_leak(i, element, prompt) for i, element in enumerate(case.advice)]


def worst(leaks: list[ElementLeak]) -> ElementLeak | None:
    return max(leaks, key=lambda leak: leak.leak, default=None)


def check(case: Case, doc: Doc, max_leak: float, pack: DomainPack | None = None) -> Case | Rejection:
    """The case, or an `answer_leak` rejection (the overlapping spans in its detail) when an advice
    element's leak is above `max_leak`."""
    leaks = audit(case, pack)
    over = [leak.describe() for leak in leaks if leak.leak > max_leak]
    if not over:
        return case
    detail = f"the prompt already states the advice (leak > {max_leak:.2f}): " + " | ".join(over)
    return reject(doc, "answer_leak", detail[:2000], stage=STAGE)
