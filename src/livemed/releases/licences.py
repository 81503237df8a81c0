"""Licences per record: which cases a public export may carry as text, and which only as ids and links.

A case's licence is its source document's own (`Doc.licence`, e.g. an Europe PMC article's), else its
source's (`SOURCE_LICENCES`). Only an open licence (CC0, CC BY, CC BY-SA, public domain) lets the text
out; PubMed abstracts never do (their publishers hold the copyright), whatever a record says; an unknown
licence does not either. `include_text=True` (the user's own decision, e.g. for a private export)
exports every text.
"""

from __future__ import annotations

from livemed.records import ReleaseItem

SOURCE_LICENCES: dict[str, str] = {
    "demo": "CC0-1.0 (livemed demo data, written by the livemed team)",
    "stackexchange": "CC BY-SA 4.0 (Stack Exchange content)",
    "pubmed": "publisher copyright (PubMed abstracts are not licensed for redistribution)",
    "healthbench": "MIT (OpenAI HealthBench)",
}
NO_REDISTRIBUTION = frozenset({"pubmed"})
OPEN_MARKS = ("cc0", "cc-0", "cc by", "cc-by", "ccby", "public domain", "mit")


def licence_of(item: ReleaseItem) -> str:
    """The licence that applies to a frozen case: its document's, else its source's, else unknown."""
    return item.licence or SOURCE_LICENCES.get(item.case.source) or "unknown"


def redistributable(item: ReleaseItem) -> bool:
    """Whether a public export may carry the case's text."""
    if item.case.source in NO_REDISTRIBUTION:
        return False
    text = licence_of(item).lower().replace("_", " ")
    return any(mark in text for mark in OPEN_MARKS)


__all__ = ["NO_REDISTRIBUTION", "SOURCE_LICENCES", "licence_of", "redistributable"]
