"""PubMed via NCBI E-utilities: case reports by Entrez date, abstracts and MeSH from efetch XML.

`esearch` (`"Case Reports"[Publication Type]`, `datetype=edat`, `mindate`/`maxdate`, history server)
then `efetch` in batches. A window with more than 9,999 hits is split in halves until each fits
(esearch cannot page past 9,999). `tool` and `email` go with every request; an API key, read from the
environment variable the settings name, raises the rate from 3 to 10 requests/s. An efetch page that
is not well-formed XML is split into its `<PubmedArticle>` elements, parsed one by one, so one bad
record is rejected (with its PMID when it can be read) and the rest of the page is kept. A page with
no articles at all is logged as a warning naming the window and offset, and counted as an
`empty_page` rejection. Superscripts in titles and abstracts keep a caret (`10^9/L`, see `sources.xml`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any, ClassVar

from lxml import etree
from pydantic import Field

from livemed.errors import SourceError
from livemed.records import Doc
from livemed.sources.base import DocOrRejection, HttpSettings, rejection, too_large
from livemed.sources.http import HttpClient
from livemed.sources.xml import inline_text, parse_xml, text_of

NAME = "pubmed"
logger = logging.getLogger(__name__)
ESEARCH_MAX = 9_999
_ARTICLE = re.compile(rb"<PubmedArticle\b[^>]*>.*?</PubmedArticle>", re.DOTALL)
_PMID = re.compile(rb"<PMID\b[^>]*>\s*(\d+)\s*</PMID>")
# MeSH check tags: on nearly every record, so not evidence of a medical topic (also used by europepmc).
CHECK_TAGS = frozenset(
    {
        "Humans",
        "Animals",
        "Male",
        "Female",
        "Infant",
        "Infant, Newborn",
        "Child",
        "Child, Preschool",
        "Adolescent",
        "Young Adult",
        "Adult",
        "Middle Aged",
        "Aged",
        "Aged, 80 and over",
    }
)


class Settings(HttpSettings):
    description: ClassVar[str] = "PubMed case reports (NCBI E-utilities esearch + efetch)"

    base_url: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    requests_per_second: float = Field(default=3.0, gt=0, le=10)
    term: str = '"Case Reports"[Publication Type]'
    tool: str = "livemed"
    email: str | None = None
    page_size: int = Field(default=200, ge=1, le=10_000)
    api_key_env: str | None = "NCBI_API_KEY"


class PubMed:
    name = NAME
    ordered = False

    def __init__(self, settings: Settings, api_key: str | None = None) -> None:
        self.settings = settings
        self._api_key = api_key
        # NCBI's policy: at most 3 requests/s without a key, 10 with one.
        self.rate = 10.0 if api_key else min(3.0, settings.requests_per_second)

    def _params(self, **extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"db": "pubmed", "tool": self.settings.tool, **extra}
        if self.settings.email:
            params["email"] = self.settings.email
        if self._api_key:
            params["api_key"] = self._api_key
        return params

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        s = self.settings
        yielded = 0
        async with HttpClient.for_source(NAME, s, requests_per_second=self.rate) as http:
            async for first, last, count, history in self._windows(http, since.date(), until.date()):
                if count > ESEARCH_MAX:
                    detail = (
                        f"{count:,} hits on {first}..{last}; esearch serves only the first {ESEARCH_MAX:,}"
                    )
                    yield rejection(NAME, f"window:{first}", "window_truncated", detail)
                for retstart in range(0, min(count, ESEARCH_MAX), s.page_size):
                    async for item in self._fetch(http, history, retstart, f"{first}..{last}"):
                        yield item
                        yielded += isinstance(item, Doc)
                        if limit is not None and yielded >= limit:
                            return

    async def _windows(
        self, http: HttpClient, start: date, end: date
    ) -> AsyncIterator[tuple[date, date, int, tuple[str, str]]]:
        """Date windows (ascending) whose esearch count fits under 9,999, with their history keys."""
        pending = [(start, end)]
        while pending:
            first, last = pending.pop(0)
            count, history = await self._search(http, first, last)
            if count > ESEARCH_MAX and last > first:
                middle = first + (last - first) // 2
                pending[:0] = [(first, middle), (middle + timedelta(days=1), last)]
                continue
            if count:
                yield first, last, count, history

    async def _search(self, http: HttpClient, first: date, last: date) -> tuple[int, tuple[str, str]]:
        params = self._params(
            term=self.settings.term,
            datetype="edat",
            mindate=first.strftime("%Y/%m/%d"),
            maxdate=last.strftime("%Y/%m/%d"),
            usehistory="y",
            retmax=0,
        )
        response = await http.get(f"{self.settings.base_url}/esearch.fcgi", params)
        try:
            root = parse_xml(response.content)
        except etree.XMLSyntaxError as exc:
            raise SourceError(f"{NAME}: esearch returned malformed XML ({exc})") from None
        error = root.findtext("ERROR")
        if error:
            raise SourceError(f"{NAME}: esearch error: {error.strip()[:200]}")
        try:
            count = int(root.findtext("Count") or "")
        except ValueError:
            raise SourceError(f"{NAME}: esearch reply has no Count") from None
        return count, (root.findtext("QueryKey") or "", root.findtext("WebEnv") or "")

    async def _fetch(
        self, http: HttpClient, history: tuple[str, str], retstart: int, window: str
    ) -> AsyncIterator[DocOrRejection]:
        query_key, webenv = history
        params = self._params(
            query_key=query_key,
            WebEnv=webenv,
            retstart=retstart,
            retmax=self.settings.page_size,
            retmode="xml",
            rettype="abstract",
        )
        response = await http.get(f"{self.settings.base_url}/efetch.fcgi", params)
        try:
            root = parse_xml(response.content)
        except etree.XMLSyntaxError as exc:
            for item in split_page(response.content, retstart, exc, self.settings.max_record_bytes):
                yield item
            return
        articles = list(root.iter("PubmedArticle"))
        if not articles:
            yield empty_page(window, retstart, root)
        for article in articles:
            yield parse_article(article, self.settings.max_record_bytes)


def empty_page(window: str, retstart: int, root: etree._Element) -> DocOrRejection:
    """An efetch page with no <PubmedArticle> where esearch counted some: a warning and a rejection,
    so the run's counts show it (`rejected.harvest.empty_page`)."""
    error = " ".join((root.findtext("ERROR") or "").split())[:200]
    detail = f"efetch returned no articles for the Entrez-date window {window} at retstart {retstart}"
    detail += f" (<{root.tag}>{': ' + error if error else ''})"
    logger.warning("%s: %s", NAME, detail)
    return rejection(NAME, f"efetch:{window}@{retstart}", "empty_page", detail)


def split_page(
    content: bytes, retstart: int, error: etree.XMLSyntaxError, max_bytes: int = 1_000_000
) -> Iterator[DocOrRejection]:
    """A malformed efetch page, article by article: only the bad records are rejected."""
    end = 0
    for number, found in enumerate(_ARTICLE.finditer(content)):
        end = found.end()
        try:
            yield parse_article(parse_xml(found.group()), max_bytes)
        except etree.XMLSyntaxError as exc:
            yield _bad_record(found.group(), f"record {number} of the efetch page at {retstart}: {exc}")
    rest = content[end:]
    if b"<PubmedArticle" in rest:  # a record cut short (no closing tag)
        yield _bad_record(rest, f"unterminated record in the efetch page at {retstart}: {error}")
    elif end == 0:
        yield rejection(NAME, f"batch@{retstart}", "bad_xml", f"efetch page at {retstart}: {error}")


def _bad_record(chunk: bytes, detail: str) -> DocOrRejection:
    pmid = _PMID.search(chunk)
    return rejection(NAME, pmid.group(1).decode() if pmid else "", "bad_xml", detail)


def pubmed_date(element: etree._Element | None) -> datetime | None:
    """A date from <Year>/<Month>/<Day> children (month may be a number or a name)."""
    if element is None:
        return None
    try:
        year = int(element.findtext("Year") or "")
        month_text = (element.findtext("Month") or "1").strip()
        month = int(month_text) if month_text.isdigit() else datetime.strptime(month_text[:3], "%b").month
        day = int(element.findtext("Day") or "1")
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def parse_article(article: etree._Element, max_bytes: int = 1_000_000) -> DocOrRejection:
    """One <PubmedArticle> as a Doc (dated by its Entrez date), or a Rejection."""
    pmid = (article.findtext("MedlineCitation/PMID") or "").strip()
    if not pmid:
        return rejection(NAME, "", "malformed", "PubmedArticle without a PMID")
    published = pubmed_date(article.find("PubmedData/History/PubMedPubDate[@PubStatus='entrez']"))
    if published is None:
        return rejection(NAME, pmid, "missing_date", "no Entrez date (PubMedPubDate PubStatus=entrez)")
    parts = []
    for node in article.iterfind("MedlineCitation/Article/Abstract/AbstractText"):
        label = node.get("Label")
        text = inline_text(node)
        parts.append(f"{label}: {text}" if label else text)
    text = "\n".join(p for p in parts if p)
    if not text:
        return rejection(NAME, pmid, "no_text", "no abstract")
    big = too_large(NAME, pmid, len(text.encode()), max_bytes)
    if big:
        return big
    mesh = [
        text_of(d) for d in article.iterfind("MedlineCitation/MeshHeadingList/MeshHeading/DescriptorName")
    ]
    return Doc(
        source=NAME,
        source_id=pmid,
        url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
        published=published,
        date_field="entrez",
        doc_type="case_report",
        title=inline_text(article.find("MedlineCitation/Article/ArticleTitle")),
        text=text,
        licence=None,
        metadata={
            "pmid": pmid,
            "journal": text_of(article.find("MedlineCitation/Article/Journal/Title")),
            "language": article.findtext("MedlineCitation/Article/Language"),
            "publication_types": [
                text_of(p)
                for p in article.iterfind("MedlineCitation/Article/PublicationTypeList/PublicationType")
            ],
            "mesh": [m for m in mesh if m not in CHECK_TAGS],
            "doi": article.findtext("PubmedData/ArticleIdList/ArticleId[@IdType='doi']"),
        },
    )
