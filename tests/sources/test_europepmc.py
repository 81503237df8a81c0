from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from livemed.errors import SourceError
from livemed.sources.europepmc import EuropePMC, Settings
from livemed.sources.xml import jats_body_text, jats_licence, parse_xml
from tests.fakes.http_replay import ReplayServer, Reply
from tests.sources.helpers import FAST, collect, day

JATS = """<?xml version="1.0"?>
<!DOCTYPE article [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<article xmlns:xlink="http://www.w3.org/1999/xlink"><front><article-meta>
<permissions><license xlink:href="https://creativecommons.org/licenses/by/4.0/"><license-p>CC BY</license-p>
</license></permissions></article-meta></front>
<body><sec><title>Case presentation</title><p>A 54-year-old man presented with chest pain
<xref ref-type="bibr">1</xref> and dyspnoea.&xxe;</p>
<table-wrap><p>table text</p></table-wrap></sec></body></article>
"""


def result(
    pmcid: str, date: str | None = "2025-03-02", licence: str = "cc by", **extra: Any
) -> dict[str, Any]:
    """One `resultType=core` record, shaped like Europe PMC's: a MED record (id = PMID) with a PMCID."""
    pmid = str(40000000 + int(pmcid.removeprefix("PMC")))
    return {
        "id": pmid,
        "source": "MED",
        "pmid": pmid,
        "pmcid": pmcid,
        "fullTextIdList": {"fullTextId": [pmcid]},
        "doi": f"10.1136/bcr-2025-{pmid}",
        "title": f"Case {pmcid}",
        "authorString": "Doe J, Roe R.",
        "journalInfo": {
            "yearOfPublication": 2025,
            "journal": {"title": "BMJ Case Reports", "medlineAbbreviation": "BMJ Case Rep"},
        },
        "pubYear": "2025",
        "abstractText": "Abstract text of the case.",
        "language": "eng",
        "pubModel": "Electronic",
        "pubTypeList": {"pubType": ["Case Reports", "Journal Article"]},
        "meshHeadingList": {
            "meshHeading": [
                {"majorTopic_YN": "Y" if n == "Chest Pain" else "N", "descriptorName": n}
                for n in ("Humans", "Male", "Chest Pain", "Adult")
            ]
        },
        "keywordList": {"keyword": ["Cardiology", "Emergency medicine"]},
        "fullTextUrlList": {
            "fullTextUrl": [
                {
                    "availability": "Open access",
                    "availabilityCode": "OA",
                    "documentStyle": "html",
                    "site": "Europe_PMC",
                    "url": f"https://europepmc.org/articles/{pmcid}",
                }
            ]
        },
        "isOpenAccess": "Y",
        "inEPMC": "Y",
        "inPMC": "Y",
        "hasPDF": "Y",
        "hasTextMinedTerms": "Y",
        "citedByCount": 0,
        "license": licence,
        "firstIndexDate": date,
        "firstPublicationDate": date,
        **extra,
    }


def page(cursor: str, following: str, results: list[Any]) -> dict[str, Any]:
    """The search wrapper: version, hitCount, the request echoed, nextCursorMark, resultList."""
    return {
        "version": "6.9",
        "hitCount": 5,
        "nextCursorMark": following,
        "request": {"resultType": "core", "cursorMark": cursor, "pageSize": 100, "synonym": False},
        "resultList": {"result": results},
    }


C1, C2 = "AoIIQEOWhig0MDAwMDAwMg==", "AoIIQEOWhig0MDAwMDAwNQ=="
PAGES = {
    "*": page("*", C1, [result("PMC1"), result("PMC2", date=None)]),
    C1: page(C1, C2, [result("PMC3", licence="cc by-nc"), result("PMC4"), "junk"]),
    C2: page(C2, C2, []),
}


def handler(path: str, query: dict[str, str]) -> Reply:
    if path == "/search":
        assert 'PUB_TYPE:"Case Reports"' in query["query"]
        assert "FIRST_PDATE:[2025-03-01 TO" in query["query"]
        assert query["format"] == "json"
        assert query["resultType"] == "core"
        assert query["sort"] == "FIRST_PDATE_D asc"
        return Reply.json(PAGES[query["cursorMark"]])
    if path == "/PMC1/fullTextXML":
        return Reply.xml(JATS)
    if path == "/PMC4/fullTextXML":
        return Reply.xml(b"<article><body><p>unclosed")
    return Reply(404)


async def test_pages_with_cursor_mark_keep_licence_and_reject_bad_records() -> None:
    with ReplayServer(handler) as server:
        source = EuropePMC(Settings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["PMC1"]
    doc = docs[0]
    assert doc.id == "europepmc:PMC1"
    assert doc.date_field == "firstPublicationDate"
    assert doc.doc_type == "case_report"
    assert doc.licence == "cc by"
    assert doc.metadata["mesh"] == ["Chest Pain"]
    assert doc.metadata["keywords"] == ["Cardiology", "Emergency medicine"]
    assert doc.metadata["pmid"] == "40000001"
    assert doc.metadata["journal"] == "BMJ Case Reports"
    assert doc.url == "https://europepmc.org/article/PMC/PMC1"
    assert doc.metadata["full_text"] is True
    # the search record's abstract is its own section, then the body (the bibr marker gone)
    assert doc.text == (
        "Abstract\n\nAbstract text of the case.\n\n"
        "Case presentation\n\nA 54-year-old man presented with chest pain and dyspnoea."
    )
    assert "table text" not in doc.text
    assert "root:" not in doc.text
    reasons = sorted(r.reason for r in rejections)
    assert reasons == ["bad_xml", "licence", "malformed", "missing_date"]
    assert all(r.stage == "harvest" and r.source == "europepmc" for r in rejections)
    assert [q["cursorMark"] for p, q in server.requests if p == "/search"] == ["*", C1, C2]


async def test_limit_stops_early_and_empty_result_is_fine() -> None:
    with ReplayServer(handler) as server:
        source = EuropePMC(Settings(base_url=server.url, full_text=False, **FAST))
        docs, _ = await collect(source.harvest(day("2025-03-01"), day("2025-03-31"), limit=1))
    assert len(docs) == 1
    assert docs[0].text == "Abstract text of the case."
    assert not docs[0].metadata["full_text"]

    empty = {"version": "6.9", "hitCount": 0, "request": {"cursorMark": "*"}, "resultList": {"result": []}}
    with ReplayServer(lambda p, q: Reply.json(empty)) as server:
        docs, rejections = await collect(
            EuropePMC(Settings(base_url=server.url, **FAST)).harvest(day("2025-03-01"), day("2025-03-31"))
        )
    assert docs == []
    assert rejections == []
    assert len(server.requests) == 1


async def test_non_json_page_is_a_source_error() -> None:
    with ReplayServer(lambda p, q: Reply(200, b"<html>maintenance</html>")) as server:
        source = EuropePMC(Settings(base_url=server.url, **FAST))
        with pytest.raises(SourceError, match="europepmc"):
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))


def test_real_pmc_jats_sample_parses(shared_data: Path) -> None:
    root = parse_xml((shared_data / "ncbi-eutils-samples" / "efetch_pmc.xml").read_bytes())
    assert jats_body_text(root).startswith("This article was originally published with an error in table 2.")
    assert jats_licence(root) == "https://creativecommons.org/licenses/by-nc/4.0/"


async def test_429_on_a_page_is_retried_and_the_harvest_goes_on() -> None:
    calls: list[str] = []

    def flaky(path: str, query: dict[str, str]) -> Reply:
        calls.append(path)
        if len(calls) == 1:
            return Reply.json({"error": "slow down"}, 429, **{"Retry-After": "0"})
        return handler(path, query)

    with ReplayServer(flaky) as server:
        source = EuropePMC(Settings(base_url=server.url, **FAST))
        docs, _ = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["PMC1"]
    assert calls[:2] == ["/search", "/search"]


async def test_a_full_text_that_keeps_failing_falls_back_to_the_abstract() -> None:
    first = page("*", "*", [result("PMC1"), result("PMC5"), result("PMC6", abstractText="")])

    def down(path: str, query: dict[str, str]) -> Reply:
        if path == "/search":
            return Reply.json(first)
        if path == "/PMC1/fullTextXML":
            return Reply.xml(JATS)
        # PMC5 and PMC6: full text down for good (Europe PMC's maintenance reply is plain text)
        return Reply(503, b"This API is temporarily unavailable due to maintenance.")

    with ReplayServer(down) as server:
        source = EuropePMC(Settings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert [d.source_id for d in docs] == ["PMC1", "PMC5"]
    assert docs[1].text == "Abstract text of the case."
    assert docs[1].metadata["full_text"] is False
    assert "503" in docs[1].metadata["full_text_error"]
    assert "full_text_error" not in docs[0].metadata
    assert [(r.reason, r.record_id) for r in rejections] == [("full_text_failed", "europepmc:PMC6")]


async def test_an_errcode_body_is_a_source_error_not_an_empty_page() -> None:
    # Europe PMC reports a refused search as errCode/errMsg inside an HTTP 200 body
    refused = {"errCode": 404, "errMsg": "Invalid page size provided. Valid size is between 1 and 1000"}
    with ReplayServer(lambda p, q: Reply.json(refused)) as server:
        source = EuropePMC(Settings(base_url=server.url, **FAST))
        with pytest.raises(SourceError, match="errCode 404: Invalid page size"):
            await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert len(server.requests) == 1


async def test_no_full_text_fetch_when_not_in_europe_pmc_and_404_falls_back() -> None:
    # inEPMC "N": fullTextXML would answer 404, so it is not asked; PMC8's 404 (empty body) means
    # no full text and the abstract stands in; a PMC-source record has id "PMC…" and no PMID
    pmc_source = result("PMC9", id="PMC9", source="PMC", abstractText="<h4>Case</h4><p>A boy.</p>")
    del pmc_source["pmid"]
    first = page("*", "*", [result("PMC7", inEPMC="N"), result("PMC8"), pmc_source])

    def serve(path: str, query: dict[str, str]) -> Reply:
        if path == "/search":
            return Reply.json(first)
        if path == "/PMC9/fullTextXML":
            return Reply.xml(JATS)
        return Reply(404)

    with ReplayServer(serve) as server:
        source = EuropePMC(Settings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert rejections == []
    assert [(d.source_id, d.metadata["full_text"]) for d in docs] == [
        ("PMC7", False),
        ("PMC8", False),
        ("PMC9", True),
    ]
    assert docs[2].metadata["pmid"] is None
    assert "/PMC7/fullTextXML" not in server.paths()
    assert "/PMC8/fullTextXML" in server.paths()
