# ruff: noqa: E501
from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pytest

from livemed.errors import SourceError
from livemed.records import Doc
from livemed.sources.pubmed import ESEARCH_MAX, PubMed, Settings, parse_article
from livemed.sources.xml import parse_xml
from tests.fakes.http_replay import ReplayServer, Reply
from tests.sources.helpers import FAST, collect, day

ESEARCH = """<?xml version="1.0" encoding="UTF-8" ?>
<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD esearch 20060628//EN" "https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">
<eSearchResult><Count>{count}</Count><RetMax>0</RetMax><RetStart>0</RetStart><QueryKey>1</QueryKey><WebEnv>{webenv}</WebEnv><IdList>
</IdList><TranslationSet/><QueryTranslation>"case reports"[Publication Type] AND {window}[Date - Entry]</QueryTranslation></eSearchResult>
"""
ARTICLE = """<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{pmid}</PMID>
<Article PubModel="Print"><Journal><Title>BMJ case reports</Title></Journal><ArticleTitle>Case {pmid}</ArticleTitle>
<Abstract><AbstractText Label="CASE">A 40-year-old woman with fever and rash.</AbstractText></Abstract>
<Language>eng</Language><PublicationTypeList><PublicationType UI="D002363">Case Reports</PublicationType>
</PublicationTypeList></Article><MeshHeadingList><MeshHeading><DescriptorName UI="D006801">Humans</DescriptorName>
</MeshHeading><MeshHeading><DescriptorName UI="D005334">Fever</DescriptorName></MeshHeading></MeshHeadingList>
</MedlineCitation><PubmedData><History>{entrez}</History></PubmedData></PubmedArticle>"""
ENTREZ = '<PubMedPubDate PubStatus="entrez"><Year>2025</Year><Month>3</Month><Day>{d}</Day></PubMedPubDate>'
HEAD = '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'


def efetch_page(start: int) -> str:
    articles = [ARTICLE.format(pmid=40000000 + start + i, entrez=ENTREZ.format(d=1 + i)) for i in range(2)]
    articles.append(ARTICLE.format(pmid=40000999 + start, entrez=""))  # no Entrez date
    return HEAD + "<PubmedArticleSet>" + "".join(articles) + "</PubmedArticleSet>"


def per_day(first: str, last: str) -> int:
    span = (datetime.strptime(last, "%Y/%m/%d") - datetime.strptime(first, "%Y/%m/%d")).days + 1
    return 3_000 * span  # 3,000 case reports a day: a month is far over esearch's 9,999


def handler(path: str, query: dict[str, str]) -> Reply:
    assert query["db"] == "pubmed"
    assert query["tool"] == "livemed"
    if path == "/esearch.fcgi":
        assert query["term"] == '"Case Reports"[Publication Type]'
        assert query["datetype"] == "edat"
        count = per_day(query["mindate"], query["maxdate"]) if query["mindate"] != "2025/02/01" else 0
        window = f"{query['mindate']}:{query['maxdate']}"
        return Reply.xml(ESEARCH.format(count=count, webenv=f"MCID_{window}", window=window))
    if path == "/efetch.fcgi":
        if int(query["retstart"]) == 2:
            return Reply.xml(b"<PubmedArticleSet><PubmedArticle>broken")
        return Reply.xml(efetch_page(int(query["retstart"])))
    return Reply(404)


async def test_windows_are_split_under_the_esearch_limit() -> None:
    with ReplayServer(handler) as server:
        source = PubMed(Settings(base_url=server.url, page_size=2, email="me@example.org", **FAST), "KEY")
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-10"), limit=4))
    searches = [q for p, q in server.requests if p == "/esearch.fcgi"]
    fetched = [q for p, q in server.requests if p == "/efetch.fcgi"]
    served = {q["WebEnv"] for q in fetched}
    counts = {f"MCID_{q['mindate']}:{q['maxdate']}": per_day(q["mindate"], q["maxdate"]) for q in searches}
    assert served
    assert all(counts[webenv] <= ESEARCH_MAX for webenv in served)
    assert searches[0]["mindate"] == "2025/03/01"
    assert searches[0]["maxdate"] == "2025/03/10"
    assert all(q["api_key"] == "KEY" and q["email"] == "me@example.org" for _, q in server.requests)
    assert source.rate == 10.0
    assert len(docs) == 4
    assert docs[0].id == "pubmed:40000000"
    assert docs[0].date_field == "entrez"
    assert docs[0].published == day("2025-03-01")
    assert docs[0].metadata["mesh"] == ["Fever"]
    assert docs[0].text == "CASE: A 40-year-old woman with fever and rash."
    assert {r.reason for r in rejections} == {"missing_date", "bad_xml"}


async def test_empty_window_fetches_nothing_and_esearch_error_fails_the_source() -> None:
    with ReplayServer(handler) as server:
        source = PubMed(Settings(base_url=server.url, **FAST))
        assert source.rate <= 3.0
        docs, _ = await collect(source.harvest(day("2025-02-01"), day("2025-02-01")))
    assert docs == []
    assert server.paths() == ["/esearch.fcgi"]

    error = "<eSearchResult><ERROR>Invalid query</ERROR></eSearchResult>"
    with ReplayServer(lambda p, q: Reply.xml(error)) as server:
        source = PubMed(Settings(base_url=server.url, **FAST), "KEY-SECRET")
        with pytest.raises(SourceError, match="Invalid query") as caught:
            await collect(source.harvest(day("2025-02-01"), day("2025-02-02")))
    assert "KEY-SECRET" not in str(caught.value)


def test_real_esearch_and_efetch_samples_parse(shared_data: Path) -> None:
    folder = shared_data / "ncbi-eutils-samples"
    search = parse_xml((folder / "esearch2.xml").read_bytes())
    assert int(search.findtext("Count") or 0) == 42249
    assert search.findtext("WebEnv", "").startswith("MCID_")
    root = parse_xml((folder / "pubmed1.xml").read_bytes())
    items = [parse_article(a) for a in root.iter("PubmedArticle")]
    assert items[0].reason == "no_text"  # type: ignore[union-attr]  # 12091962 has no abstract
    doc = items[1]
    assert isinstance(doc, Doc)
    assert doc.source_id == "9997"
    assert doc.published.date() == date(1976, 9, 28)
    assert doc.title.startswith("Magnetic studies of Chromatium flavocytochrome C552")
    assert "Heme" in doc.metadata["mesh"]
    assert doc.metadata["doi"] == "10.1016/0005-2795(76)90109-4"


async def test_a_single_day_over_the_limit_is_reported_as_truncated() -> None:
    def busy(path: str, query: dict[str, str]) -> Reply:
        if path == "/esearch.fcgi":
            return Reply.xml(ESEARCH.format(count=12_000, webenv="MCID_day", window="day"))
        return Reply.xml(efetch_page(int(query["retstart"])))

    with ReplayServer(busy) as server:
        source = PubMed(Settings(base_url=server.url, page_size=2, **FAST), "KEY")
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-01"), limit=2))
    assert len(docs) == 2
    truncated = [r for r in rejections if r.reason == "window_truncated"]
    assert len(truncated) == 1
    assert "12,000 hits" in truncated[0].detail


async def test_one_malformed_record_does_not_drop_the_rest_of_its_page() -> None:
    good = [ARTICLE.format(pmid=41000000 + i, entrez=ENTREZ.format(d=1 + i)) for i in range(3)]
    bad = good[1].replace("fever and rash", "fever & rash <b>")  # not well-formed
    page = HEAD + "<PubmedArticleSet>" + good[0] + bad + good[2] + "</PubmedArticleSet>"

    def replies(path: str, query: dict[str, str]) -> Reply:
        if path == "/esearch.fcgi":
            return Reply.xml(ESEARCH.format(count=3, webenv="W", window="w"))
        return Reply.xml(page)

    with ReplayServer(replies) as server:
        source = PubMed(Settings(base_url=server.url, page_size=10, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-01")))
    assert [d.id for d in docs] == ["pubmed:41000000", "pubmed:41000002"]
    assert [(r.reason, r.record_id) for r in rejections] == [("bad_xml", "pubmed:41000001")]
    assert "record 1" in rejections[0].detail
