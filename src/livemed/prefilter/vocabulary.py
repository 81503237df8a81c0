"""Medical relevance by vocabulary: ICD-10-CM title words (simple-icd-10-cm) plus the record's MeSH terms.

The term list is built once from every ICD-10-CM title outside the external-cause and
health-status chapters (V-Z), minus generic words ("left", "initial", "head", …), plus a few
clinical words ICD does not use as titles ("diagnosis", "medication", …) and any configured extra
terms. Matching is one Aho-Corasick pass (pyahocorasick) over the lowercased text, on word
boundaries; a document passes with at least `min_hits` distinct terms, where each MeSH descriptor
the record carries counts as one.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

import ahocorasick

from livemed.prefilter.base import reject
from livemed.records import Doc, Rejection


def _split(text: str) -> list[str]:
    return text.split()


GENERIC = frozenset(
    _split(
        """
    other unspecified specified with without from into including except following involving affecting
    primarily encounter subsequent initial sequela routine delayed healing elsewhere classified
    undetermined intentional unintentional accidental suspected system process device devices agents
    extension stage organ organs wall damage drugs foreign mechanical external internal central primary
    secondary lesser greater multiple single bilateral abnormal separation breakdown displacement
    procedure assault left right head back hand body side front base area ring index little great open
    closed level effect care loss contact stress hours minutes major current complete first second third
    fourth fifth middle lower upper part parts site sites region type types labor pressure nail cord
    reaction due than used means person place state status problem problems history family related
    certain more less long short high late early means condition conditions abnormalities nonspecific
    findings health services after before during same function functions time times use
        """
    )
)
CLINICAL = _split(
    """
    diagnosis diagnosed symptom symptoms medication medications prescribed prescription dose dosage
    treatment treated therapy surgery surgical physician doctor clinic hospital patient biopsy
    antibiotic antibiotics ultrasound radiograph scan
    """
)
_WORD = re.compile(r"[a-z][a-z'-]{3,}")


@lru_cache(maxsize=1)
def icd10_terms() -> frozenset[str]:
    """Distinct words (4+ letters) of ICD-10-CM titles in chapters A-U, generic words removed."""
    with warnings.catch_warnings():  # the package reads its bundled list with a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        import simple_icd_10_cm as icd

    terms: set[str] = set()
    for code in icd.get_all_codes(False):
        if code[0] in "VWXYZ":
            continue
        terms.update(_WORD.findall(icd.get_description(code).lower()))
    return frozenset(terms - GENERIC)


@lru_cache(maxsize=8)
def build_automaton(extra: tuple[str, ...] = ()) -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for term in sorted(icd10_terms() | set(CLINICAL) | {t.lower().strip() for t in extra if t.strip()}):
        automaton.add_word(term, term)
    automaton.make_automaton()
    return automaton


def _boundary(text: str, start: int, end: int) -> bool:
    if start > 0 and text[start - 1].isalnum():
        return False
    if end + 1 < len(text) and text[end + 1] == "s":  # a plural: "fractures"
        end += 1
    return end + 1 >= len(text) or not text[end + 1].isalnum()


def medical_terms(text: str, automaton: ahocorasick.Automaton) -> set[str]:
    """Distinct vocabulary terms found in `text` on word boundaries."""
    lowered = text.lower()
    return {term for end, term in automaton.iter(lowered) if _boundary(lowered, end - len(term) + 1, end)}


class VocabularyFilter:
    name = "vocabulary"

    def __init__(self, min_hits: int = 2, extra_terms: list[str] | None = None) -> None:
        self.min_hits = min_hits
        self.automaton = build_automaton(tuple(extra_terms or ()))

    def __call__(self, doc: Doc) -> Doc | Rejection:
        mesh = doc.metadata.get("mesh") or []
        found = medical_terms(f"{doc.title}\n{doc.text}", self.automaton)
        hits = len(found) + (len(mesh) if isinstance(mesh, list) else 0)
        if hits < self.min_hits:
            shown = ", ".join(sorted(found)) or "none"
            return reject(doc, "not_medical", f"{hits} medical term(s) ({shown}), need {self.min_hits}")
        return doc
