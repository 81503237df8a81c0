"""Live evidence from Europe PMC's search API (abstracts of the best-matching articles).

Network failures are not evidence, and not a lack of it either: a failed search raises
`RetrievalError` (the Validator then records a retryable `retrieval_failed`) and is counted in
`errors`, so the command can warn about it.
"""

from __future__ import annotations

from typing import Any

import httpx

from livemed.curate.evidence import RetrievalError
from livemed.curate.evidence.corpus import snippet
from livemed.records import EvidenceRef

EUROPE_PMC_URL = "https://www.ebi.ac.uk/europepmc/webservices/rest"


class EuropePMCRetriever:
    """`GET {base_url}/search?query=…&format=json&resultType=core`, abstracts as snippets."""

    name = "europepmc"

    def __init__(
        self,
        *,
        base_url: str = EUROPE_PMC_URL,
        timeout_s: float = 20.0,
        client: httpx.AsyncClient | None = None,
        open_access_only: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.open_access_only = open_access_only
        self._client = client
        self.errors: list[str] = []

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        terms = f"({query}) AND OPEN_ACCESS:y" if self.open_access_only else query
        params = {"query": terms, "format": "json", "resultType": "core", "pageSize": str(k)}
        try:
            data = await self._get(params)
        except (httpx.HTTPError, ValueError) as exc:
            message = f"{type(exc).__name__}: {exc}"
            self.errors.append(message)
            raise RetrievalError(f"Europe PMC search failed: {message}") from exc
        results = data.get("resultList", {}).get("result", []) if isinstance(data, dict) else []
        return [ref for item in results[:k] if (ref := _ref(item, query)) is not None]

    async def _get(self, params: dict[str, str]) -> Any:
        url = f"{self.base_url}/search"
        if self._client is not None:
            response = await self._client.get(url, params=params, timeout=self.timeout_s)
        else:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                response = await client.get(url, params=params)
        response.raise_for_status()
        return response.json()


def _ref(item: dict[str, Any], query: str) -> EvidenceRef | None:
    abstract = str(item.get("abstractText") or "").strip()
    if not abstract:
        return None
    source, ident = item.get("source", "MED"), item.get("id", "")
    url = f"https://europepmc.org/article/{source}/{ident}" if ident else None
    return EvidenceRef(id=f"europepmc:{source}:{ident}", snippet=snippet(abstract, query), url=url)
