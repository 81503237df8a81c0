"""Harvest pre-filters: cheap checks that clean documents or reject them with a reason code.

`build_prefilters(config, pack=…)` returns a `Prefilters` chain in the configured order (default: html,
length, language, vocabulary, duplicate). Each filter maps a Doc to a (cleaned) Doc or a Rejection
with stage "prefilter"; the chain stops at the first rejection. The vocabulary filter's words come from
the domain pack (default: medical).
"""

from __future__ import annotations

from collections.abc import Callable

from livemed.config import PrefilterConfig
from livemed.domains import DomainPack, medical
from livemed.errors import UnknownNameError
from livemed.prefilter.base import STAGE, Prefilter, reject
from livemed.records import Doc, Rejection
from livemed.store import Store


def _html(_: PrefilterConfig, _pack: DomainPack) -> Prefilter:
    from livemed.prefilter.clean import HtmlStripper

    return HtmlStripper()


def _length(c: PrefilterConfig, _pack: DomainPack) -> Prefilter:
    from livemed.prefilter.simple import LengthFilter

    return LengthFilter(c.min_chars, c.max_chars)


def _language(c: PrefilterConfig, _pack: DomainPack) -> Prefilter:
    from livemed.prefilter.simple import LanguageFilter

    return LanguageFilter(c.languages)


def _vocabulary(c: PrefilterConfig, pack: DomainPack) -> Prefilter:
    from livemed.prefilter.vocabulary import VocabularyFilter

    return VocabularyFilter(c.min_vocabulary_hits, c.extra_terms, pack)


def _duplicate(c: PrefilterConfig, _pack: DomainPack) -> Prefilter:
    from livemed.prefilter.duplicates import DuplicateFilter

    return DuplicateFilter(
        threshold=c.near_duplicate_threshold, num_perm=c.num_perm, shingle_words=c.shingle_words
    )


PREFILTERS: dict[str, Callable[[PrefilterConfig, DomainPack], Prefilter]] = {
    "html": _html,
    "length": _length,
    "language": _language,
    "vocabulary": _vocabulary,
    "duplicate": _duplicate,
}


class Prefilters:
    """A chain of pre-filters; `load(store)` and `flush(store)` reach the ones that keep state."""

    def __init__(self, filters: list[Prefilter]) -> None:
        self.filters = filters
        self._loaded: set[str] = set()

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.filters]

    def __call__(self, doc: Doc) -> Doc | Rejection:
        for check in self.filters:
            result = check(doc)
            if isinstance(result, Rejection):
                return result
            doc = result
        return doc

    def load(self, store: Store) -> None:
        """Give stateful filters what the store already holds (once per store)."""
        if store.url in self._loaded:
            return
        self._loaded.add(store.url)
        for check in self.filters:
            load = getattr(check, "load", None)
            if load is not None:
                load(store)

    def flush(self, store: Store) -> None:
        for check in self.filters:
            flush = getattr(check, "flush", None)
            if flush is not None:
                flush(store)


def build_prefilters(
    config: PrefilterConfig, names: list[str] | None = None, pack: DomainPack | None = None
) -> Prefilters:
    """The configured chain (or the named filters, in that order), for `pack`'s domain (default medical)."""
    chosen = config.enabled if names is None else names
    for name in chosen:
        if name not in PREFILTERS:
            raise UnknownNameError("pre-filter", name, PREFILTERS)
    domain = pack or medical()
    return Prefilters([PREFILTERS[name](config, domain) for name in chosen])


__all__ = ["PREFILTERS", "STAGE", "Prefilter", "Prefilters", "build_prefilters", "reject"]
