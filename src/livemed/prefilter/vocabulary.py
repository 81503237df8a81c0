"""Domain relevance by vocabulary: the domain pack's terms plus the record's MeSH terms.

The word lists live in the domain pack (`[vocabulary]` of its `pack.toml`). For the medical pack
the term list is built once from every ICD-10-CM title (simple-icd-10-cm) outside the external-cause
and health-status chapters (V-Z), minus the pack's `exclude` words (generic words such as "left",
"initial", "head"; everyday English; forum false friends such as "brake"), plus its `terms` (clinical
words ICD does not use as titles: "diagnosis", "medication", …), its `as_written` lay words and its
`phrases` (what patients write on forums: "dizzy", "my period", "threw up", common drug names) and any
configured extra terms. Matching is one Aho-Corasick pass (pyahocorasick) over the lowercased text, on
word boundaries, ICD words and `terms` with the usual English endings (-s, -es, -ed, -ing: "wheezing",
"diagnosed"), `as_written` and `phrases` as written; a document passes with at least `min_hits`
(default 3) distinct terms, where each MeSH descriptor the record carries counts as one. A document
that fails is rejected with the pack's reason (`not_medical`, `not_legal`).
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from functools import lru_cache
from pathlib import Path

import ahocorasick

from livemed.domains import DomainPack, medical
from livemed.prefilter.base import reject
from livemed.records import Doc, Rejection

_WORD = re.compile(r"[a-z][a-z'-]{3,}")
_TOKEN = re.compile(r"[\w'-]+")


@lru_cache(maxsize=4)
def icd10_terms(exclude: frozenset[str] | None = None) -> frozenset[str]:
    """Distinct words (4+ letters) of ICD-10-CM titles in chapters A-U, minus `exclude` (default: the
    medical pack's) and adverbs.

    Reading the package's tables takes seconds, so the words are kept in the cache folder
    (`livemed.common.cache_dir`), one file per package version and excluded words; a missing or unreadable
    file is made again."""
    if exclude is None:
        exclude = frozenset(medical().vocabulary.exclude)
    path = _terms_file(exclude)
    try:
        return frozenset(path.read_text(encoding="utf-8").split())
    except OSError:
        pass
    terms = _read_icd10_terms(exclude)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text("\n".join(sorted(terms)) + "\n", encoding="utf-8")
        partial.replace(path)  # atomic: a reader sees the whole file or none
    except OSError:
        pass  # a read-only cache folder: read the tables each time
    return terms


def _terms_file(exclude: frozenset[str]) -> Path:
    from importlib.metadata import version

    from livemed.common.cache_dir import default_cache_dir

    lists = "\n".join(sorted(exclude)) + _WORD.pattern
    key = hashlib.sha256(lists.encode()).hexdigest()[:12]
    return default_cache_dir() / "vocabulary" / f"icd10-terms-{version('simple_icd_10_cm')}-{key}.txt"


def _read_icd10_terms(exclude: frozenset[str] | None = None) -> frozenset[str]:
    if exclude is None:
        exclude = frozenset(medical().vocabulary.exclude)
    with warnings.catch_warnings():  # the package reads its bundled list with a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        import simple_icd_10_cm as icd

    terms: set[str] = set()
    for code in icd.get_all_codes(False):
        if code[0] in "VWXYZ":
            continue
        terms.update(_WORD.findall(icd.get_description(code).lower()))
    adverbs = {term for term in terms if term.endswith("ly")}  # "properly", "normally": never domain signals
    return frozenset(terms - exclude - adverbs)


def _phrase(text: str) -> str:
    return " ".join(_TOKEN.findall(text.lower()))


@lru_cache(maxsize=8)
def build_automaton(pack: DomainPack | None = None, extra: tuple[str, ...] = ()) -> ahocorasick.Automaton:
    """Keys are " term " and its inflections, space-delimited, so matches fall on word boundaries."""
    vocabulary = (pack or medical()).vocabulary
    automaton = ahocorasick.Automaton()
    exclude = frozenset(vocabulary.exclude)
    inflected = (icd10_terms(exclude) if vocabulary.icd10 else frozenset()) | {
        _phrase(t) for t in [*vocabulary.terms, *extra]
    }
    as_written = {_phrase(t) for t in [*vocabulary.as_written, *vocabulary.phrases]} - inflected
    forms = {form: term for term in inflected if term for form in inflections(term)}
    forms.update({term: term for term in as_written if term})
    for form, term in sorted(forms.items()):
        automaton.add_word(f" {form} ", term)
    automaton.make_automaton()
    return automaton


def inflections(term: str) -> set[str]:
    """The term and its regular forms: -s/-es, -ed, -ing (a final -e dropped: "wheeze" → "wheezing")."""
    stem = term[:-1] if term.endswith("e") else term
    return {term, f"{term}s", f"{term}es", f"{stem}ed", f"{stem}ing"}


def medical_terms(text: str, automaton: ahocorasick.Automaton, enough: int | None = None) -> set[str]:
    """Distinct vocabulary terms in `text` (whole words, plural -s allowed); stops once `enough` are found."""
    padded = f" {' '.join(_TOKEN.findall(text.lower()))} "
    found: set[str] = set()
    for _, term in automaton.iter(padded):
        found.add(term)
        if enough is not None and len(found) >= enough:
            break
    return found


class VocabularyFilter:
    name = "vocabulary"

    def __init__(
        self, min_hits: int = 3, extra_terms: list[str] | None = None, pack: DomainPack | None = None
    ) -> None:
        self.min_hits = min_hits
        self.pack = pack or medical()
        self.extra_terms = tuple(extra_terms or ())

    @property
    def automaton(self) -> ahocorasick.Automaton:
        """Built (ICD-10 tables read) on the first document checked, not when the filter is made:
        a command that checks no document (an update with nothing new) never pays for it."""
        return build_automaton(self.pack, self.extra_terms)

    def __call__(self, doc: Doc) -> Doc | Rejection:
        mesh = doc.metadata.get("mesh") or []
        mesh_hits = len(mesh) if isinstance(mesh, list) else 0
        needed = max(0, self.min_hits - mesh_hits)
        found = medical_terms(f"{doc.title}\n{doc.text}", self.automaton, enough=needed) if needed else set()
        hits = len(found) + mesh_hits
        if hits < self.min_hits:
            shown = ", ".join(sorted(found)) or "none"
            subject = self.pack.subject
            reason = self.pack.vocabulary.reason
            return reject(doc, reason, f"{hits} {subject} term(s) ({shown}), need {self.min_hits}")
        return doc
