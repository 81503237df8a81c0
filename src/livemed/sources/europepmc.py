"""Europe PMC: open-access case reports by first publication date, full text from JATS.

Search: `PUB_TYPE:"Case Reports" AND FIRST_PDATE:[a TO b] AND OPEN_ACCESS:y`, `format=json`,
`resultType=core`, `cursorMark` paging, ascending by first publication date. Full text comes from
`/{PMCID}/fullTextXML` (JATS); the abstract stands in when no full text is available, or when the
full-text fetch still fails after retries (recorded as `metadata["full_text_error"]`; an article with
no abstract either is rejected alone, `full_text_failed`). Only articles whose licence is allowed
(default: CC BY and CC0) are kept. Shapes checked against observed Europe PMC replies: errors come
as `errCode`/`errMsg` in an HTTP 200 body (a source error, never an empty page), `fullTextXML` answers
404 with an empty body when Europe PMC holds no full text (skipped up front when `inEPMC` is "N").
With full text, the Doc's text is the abstract under an "Abstract" heading, then the body's section
titles and paragraphs, blocks separated by a blank line (see `sources.xml`); figure and table captions
go to `metadata["figures"]` / `metadata["tables"]`. The URL is the Europe PMC page by PMCID, else the
PubMed page by PMID, else the DOI link.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, ClassVar

import httpx
from lxml import etree
from pydantic import Field

from livemed.errors import SourceError
from livemed.records import Doc
from livemed.sources.base import DocOrRejection, HttpSettings, parse_date, rejection, too_large
from livemed.sources.http import HttpClient, has_bad_bytes, json_body
from livemed.sources.pubmed import CHECK_TAGS
from livemed.sources.xml import JatsText, jats_text, parse_xml

NAME = "europepmc"


class Settings(HttpSettings):
    description: ClassVar[str] = "Europe PMC open-access case reports (REST search + JATS full text)"

    base_url: str = "https://www.ebi.ac.uk/europepmc/webservices/rest"
    requests_per_second: float = Field(default=8.0, gt=0, lt=10)
    licences: list[str] = Field(default_factory=lambda: ["cc by", "cc0"])
    full_text: bool = True
    query: str = 'PUB_TYPE:"Case Reports" AND OPEN_ACCESS:y'
    sort: str = Field(default="FIRST_PDATE_D asc", description="oldest first, so a --limit run can resume")


def search_page(response: httpx.Response, name: str = NAME) -> dict[str, Any]:
    """A search reply as a dict; Europe PMC reports errors as `errCode`/`errMsg` in an HTTP 200 body."""
    try:
        page = json_body(response)
    except ValueError:
        page = None
    if not isinstance(page, dict):
        raise SourceError(f"{name}: search returned a page that is not the expected JSON")
    if "errCode" in page:
        raise SourceError(f"{name}: search refused: errCode {page['errCode']}: {page.get('errMsg', '')}")
    return page


def licence_allowed(licence: str | None, allowed: list[str]) -> bool:
    return licence is not None and licence.strip().lower() in {a.strip().lower() for a in allowed}


class EuropePMC:
    name = NAME
    ordered = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _query(self, since: datetime, until: datetime) -> str:
        window = f"FIRST_PDATE:[{since.date().isoformat()} TO {until.date().isoformat()}]"
        return f"{self.settings.query} AND {window}"

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        s = self.settings
        yielded = 0
        async with HttpClient.for_source(NAME, s) as http:
            async for result in self._results(http, since, until):
                item = await self._record(http, result)
                yield item
                yielded += isinstance(item, Doc)
                if limit is not None and yielded >= limit:
                    return

    async def _results(
        self, http: HttpClient, since: datetime, until: datetime
    ) -> AsyncIterator[dict[str, Any]]:
        cursor = "*"
        while True:
            params = {
                "query": self._query(since, until),
                "format": "json",
                "resultType": "core",
                "pageSize": self.settings.page_size,
                "cursorMark": cursor,
                "sort": self.settings.sort,
            }
            response = await http.get(f"{self.settings.base_url}/search", params)
            page = search_page(response)
            listing = page.get("resultList") or {}
            results = listing.get("result", []) if isinstance(listing, dict) else None
            if not isinstance(results, list):
                raise SourceError(f"{NAME}: search returned a page that is not the expected JSON")
            for result in results:
                yield result if isinstance(result, dict) else {"_malformed": repr(result)[:200]}
            following = page.get("nextCursorMark")
            if not results or not following or following == cursor:
                return
            cursor = following

    async def _record(self, http: HttpClient, result: dict[str, Any]) -> DocOrRejection:
        source_id = str(result.get("pmcid") or result.get("id") or "")
        if not source_id or "_malformed" in result:
            return rejection(NAME, source_id, "malformed", "search result without an id")
        published = parse_date(result.get("firstPublicationDate"))
        if published is None:
            return rejection(NAME, source_id, "missing_date", "no firstPublicationDate")
        if has_bad_bytes(result.get("title"), result.get("abstractText")):
            return rejection(
                NAME, source_id, "bad_encoding", "title or abstract had bytes that are not UTF-8"
            )
        licence = result.get("license")
        if not licence_allowed(licence, self.settings.licences):
            return rejection(NAME, source_id, "licence", f"licence {licence!r} is not allowed")
        found = await self._text(http, result, source_id)
        if not isinstance(found, tuple):
            return found
        text, extra, failure = found
        if not text.strip():
            if failure:
                return rejection(NAME, source_id, "full_text_failed", f"no abstract, and {failure}")
            return rejection(NAME, source_id, "no_text", "neither full text nor abstract")
        big = too_large(NAME, source_id, len(text.encode()), self.settings.max_record_bytes)
        return big or _doc(result, source_id, published, text, extra, str(licence), failure)

    async def _text(
        self, http: HttpClient, result: dict[str, Any], source_id: str
    ) -> tuple[str, dict[str, Any], str | None] | DocOrRejection:
        """(text, metadata from the full text, why the full text failed) or a rejection of the full text.

        With full text, the text is the abstract (JATS, else the search record's) under an "Abstract"
        heading, then the body; without it, the search record's abstract alone.
        """
        abstract = str(result.get("abstractText") or "")
        # fullTextXML answers 404 for anything not in Europe PMC's own full-text set (inEPMC "N")
        if not (self.settings.full_text and result.get("pmcid")) or result.get("inEPMC") == "N":
            return abstract, {"full_text": False}, None
        try:
            fetched = await self._full_text(http, source_id)
        except SourceError as exc:  # this article only: fall back to its abstract
            return abstract, {"full_text": False}, str(exc)
        if not isinstance(fetched, JatsText):
            return fetched
        if not fetched.body:
            return abstract, {"full_text": False}, None
        extra = {"full_text": True, "figures": fetched.figures, "tables": fetched.tables}
        return fetched.text(abstract), extra, None

    async def _full_text(self, http: HttpClient, pmcid: str) -> JatsText | DocOrRejection:
        response = await http.get(f"{self.settings.base_url}/{pmcid}/fullTextXML")
        if response.status_code == 404:
            return JatsText()
        big = too_large(NAME, pmcid, len(response.content), self.settings.max_record_bytes * 4)
        if big:
            return big
        try:
            return jats_text(parse_xml(response.content))
        except etree.XMLSyntaxError as exc:
            return rejection(NAME, pmcid, "bad_xml", f"fullTextXML: {exc}")


def record_url(result: dict[str, Any]) -> str | None:
    """The article's page: Europe PMC's by PMCID, else PubMed's by PMID, else its DOI link."""
    pmcid, pmid, doi = (str(result.get(k) or "").strip() for k in ("pmcid", "pmid", "doi"))
    if pmcid:
        return f"https://europepmc.org/article/PMC/{pmcid}"
    if pmid.isdigit():
        return f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
    if doi:
        return f"https://doi.org/{doi}"
    return None


def _doc(
    result: dict[str, Any],
    source_id: str,
    published: datetime,
    text: str,
    extra: dict[str, Any],
    licence: str,
    full_text_error: str | None = None,
) -> Doc:
    mesh = [
        str(h.get("descriptorName"))
        for h in (result.get("meshHeadingList") or {}).get("meshHeading", [])
        if isinstance(h, dict) and h.get("descriptorName") and h.get("descriptorName") not in CHECK_TAGS
    ]  # check tags (Humans, Male, Adult, ...) are on nearly every record: not evidence of a topic
    keywords = [str(k) for k in (result.get("keywordList") or {}).get("keyword", []) if k]
    pmcid = result.get("pmcid")
    return Doc(
        source=NAME,
        source_id=source_id,
        url=record_url(result),
        published=published,
        date_field="firstPublicationDate",
        doc_type="case_report",
        title=str(result.get("title") or ""),
        text=text,
        language=None,
        licence=licence,
        metadata={
            "pmid": result.get("pmid"),
            "pmcid": pmcid,
            "doi": result.get("doi"),
            "journal": ((result.get("journalInfo") or {}).get("journal") or {}).get("title"),
            "authors": result.get("authorString"),
            "mesh": mesh,
            "keywords": keywords,
            **extra,
            **({"full_text_error": full_text_error} if full_text_error else {}),
        },
    )
