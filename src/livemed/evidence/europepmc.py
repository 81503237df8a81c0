"""Live evidence from Europe PMC's search API (abstracts of the best-matching articles).

Requests go through the sources' polite `HttpClient` (the Europe PMC source's rate limit, shared by
every search of one retriever, bounded retries with backoff, livemed's User-Agent). Network failures
are not evidence, and not a lack of it either: a search still failing after its retries raises
`RetrievalError` (the Validator then records a retryable `retrieval_failed`) and is counted in
`errors`, so the command can warn about it. The query is built from the advice's content words
(`search_query`), never the raw sentence.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from livemed.common.text import content_words
from livemed.common.word_tables import FUNCTION_WORDS, NORMALISED_NEGATIONS
from livemed.errors import SourceError
from livemed.evidence import RetrievalError
from livemed.evidence.corpus import snippet
from livemed.prefilter.clean import strip_html
from livemed.records import EvidenceRef
from livemed.sources.europepmc import Settings, search_page
from livemed.sources.http import HttpClient, rate_limiter

EUROPE_PMC_URL = "https://www.ebi.ac.uk/europepmc/webservices/rest"
CLIENT_NAME = "europepmc-evidence"
MAX_QUERY_TERMS = 8
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits: no Lucene operator character survives


class EuropePMCRetriever:
    """`GET {base_url}/search?query=…&format=json&resultType=core`, abstracts as snippets.

    `settings` (the Europe PMC source's: rate, retries, backoff, timeout) default to the source's own;
    `base_url` and `timeout_s`, when given, override theirs.
    """

    name = "europepmc"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        timeout_s: float | None = None,
        settings: Settings | None = None,
        open_access_only: bool = False,
    ) -> None:
        base = settings or Settings()
        overrides: dict[str, Any] = {"base_url": (base_url or base.base_url).rstrip("/")}
        if timeout_s is not None:
            overrides["timeout_s"] = timeout_s
        self.settings = base.model_copy(update=overrides)
        self.base_url = self.settings.base_url
        self.open_access_only = open_access_only
        self._limiter = rate_limiter(self.settings.requests_per_second)
        self.errors: list[str] = []

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        terms = search_query(query, open_access_only=self.open_access_only)
        if terms is None:
            return []  # nothing to search for: only stop words
        params = {"query": terms, "format": "json", "resultType": "core", "pageSize": str(k)}
        try:
            data = await self._get(params)
        except SourceError as exc:
            message = f"{type(exc).__name__}: {exc}"
            self.errors.append(message)
            raise RetrievalError(f"Europe PMC search failed: {message}") from exc
        listing = data.get("resultList") or {}
        results = (listing.get("result") or []) if isinstance(listing, dict) else []
        return [ref for item in results[:k] if isinstance(item, dict) and (ref := _ref(item, query))]

    async def _get(self, params: dict[str, str]) -> dict[str, Any]:
        async with HttpClient.for_source(CLIENT_NAME, self.settings) as http:
            http.limiter = self._limiter  # one rate limit across all searches
            response = await http.get(f"{self.base_url}/search", params, accept=frozenset())
        return search_page(response, CLIENT_NAME)  # an `errCode` body (HTTP 200) is a failure too


def search_query(advice: str, *, open_access_only: bool = False) -> str | None:
    """A Europe PMC query for an advice sentence: its content words joined by OR (None: none).

    Europe PMC reads Lucene syntax, so a raw sentence can fail (a colon names a field, a quote or
    bracket left open is an `errCode`) and its words are ANDed, which rarely matches a whole sentence.
    Only letters and digits are kept, stop words and negations dropped (their words `and`, `or`, `not`,
    `to` are operators too), and at most `MAX_QUERY_TERMS` terms kept (the longest, in sentence order):
    relevance ranking puts the articles that share the most of them first.
    """
    tokens = _WORD.findall(unicodedata.normalize("NFKC", advice).lower())
    skip = FUNCTION_WORDS | NORMALISED_NEGATIONS
    terms = [w for w in content_words(tokens, skip=skip, shortest=3) if not w.isdigit()]
    unique = list(dict.fromkeys(terms))
    kept = set(sorted(unique, key=len, reverse=True)[:MAX_QUERY_TERMS])  # longer words say more
    unique = [w for w in unique if w in kept]
    if not unique:
        return None
    either = " OR ".join(unique)
    return f"({either}) AND OPEN_ACCESS:y" if open_access_only else either


def _ref(item: dict[str, Any], query: str) -> EvidenceRef | None:
    # abstracts often carry inline HTML (<h4>, <p>, <i>): a snippet is plain text
    abstract = " ".join(strip_html(str(item.get("abstractText") or "")).split())
    if not abstract:
        return None
    source, ident = item.get("source", "MED"), item.get("id", "")
    url = f"https://europepmc.org/article/{source}/{ident}" if ident else None
    return EvidenceRef(id=f"europepmc:{source}:{ident}", snippet=snippet(abstract, query), url=url)
