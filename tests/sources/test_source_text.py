"""Source text read from recorded replies: JATS narrative, superscripts, entity decoding, empty pages."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from livemed.prefilter.clean import HtmlStripper
from livemed.records import Doc
from livemed.sources.europepmc import EuropePMC
from livemed.sources.europepmc import Settings as EuropePMCSettings
from livemed.sources.pubmed import PubMed, parse_article
from livemed.sources.pubmed import Settings as PubMedSettings
from livemed.sources.stackexchange import Settings as StackExchangeSettings
from livemed.sources.stackexchange import StackExchange
from livemed.sources.xml import inline_text, jats_text, parse_xml
from tests.fakes.http_replay import ReplayServer, Reply
from tests.sources.helpers import FAST, collect, day
from tests.sources.test_europepmc import page, result

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
JATS_FIXTURE = FIXTURES / "europepmc" / "case_report_fulltext.xml"


def paragraphs(text: str) -> list[str]:
    return text.split("\n\n")


def test_jats_narrative_keeps_paragraphs_and_leaves_captions_tables_and_markers_out() -> None:
    article = jats_text(parse_xml(JATS_FIXTURE.read_bytes()))
    text = article.text()
    blocks = paragraphs(text)
    # the abstract is its own section, first, and the teaser abstract is not read
    assert blocks[:3] == [
        "Abstract",
        "Background: Dieulafoy lesions of the small bowel are a rare cause of obscure gastrointestinal "
        "bleeding in children.",
        "Case presentation: A 14-year-old boy had recurrent melaena and a haemoglobin of 62 g/L; a jejunal "
        "lesion was found by video capsule endoscopy (VCE) and treated endoscopically.",
    ]
    assert "Capsule endoscopy found the source." not in text
    assert [b for b in blocks[3:] if "." not in b] == ["Introduction", "Case presentation", "Discussion"]
    assert "\n" not in "".join(blocks)  # no line break inside a paragraph
    assert all(b.endswith(".") for b in blocks[3:] if "." in b)  # every paragraph ends a sentence
    for leaked in ("VCE image of a 14-year-old male", "Laboratory values on admission", "Supplementary",
                   "Fig. 1", "Table 1Laboratory", "Reference one", "crigm"):  # fmt: skip
        assert leaked not in text
    assert not re.search(r"^\d+\s*$", text, re.MULTILINE)  # section labels are not blocks
    assert "in adults and is rarer in children. Capsule endoscopy" in text  # [1, 2] and ^3,4 gone
    assert "over two weeks. His haemoglobin" in text  # (6–8) gone with its brackets and dash
    assert "artery." in text
    assert "[" not in text
    assert "()" not in text
    assert "(Smith et al. 2015)" in text  # an author-year citation keeps its year
    assert "platelets 245 × 10^9/L, HbA1c 5.1% and venous pCO2 5.2 kPa (Table 1)" in text
    assert article.figures == [
        {
            "id": "F1",
            "label": "Fig. 1",
            "caption": "VCE image of a 14-year-old male showing a jejunal Dieulafoy lesion with an "
            "adherent clot.",
        }
    ]
    assert article.tables == [{"id": "T1", "label": "Table 1", "caption": "Laboratory values on admission."}]


def test_superscripts_keep_a_caret_and_subscripts_join() -> None:
    element = parse_xml(
        b"<p>WBC 12 &#xd7; 10<sup>9</sup>/L, Ca<sup>2+</sup>, CO<sub>2</sub>, HbA<sub>1c</sub></p>"
    )
    assert inline_text(element) == "WBC 12 × 10^9/L, Ca^2+, CO2, HbA1c"


def europepmc_handler(path: str, query: dict[str, str]) -> Reply:
    if path == "/search":
        records = [
            result("PMC99000001"),
            {**result("PMC7"), "pmcid": None, "inEPMC": "N"},  # a MED record without a PMCID: its PubMed page
            {**result("PMC8"), "id": "PPR8", "source": "PPR", "pmcid": None, "pmid": None, "inEPMC": "N"},
        ]
        return Reply.json(page("*", "*", records))
    if path == "/PMC99000001/fullTextXML":
        return Reply.xml(JATS_FIXTURE.read_bytes())
    return Reply(404)


async def test_europepmc_full_text_has_the_abstract_section_captions_as_metadata_and_every_record_a_url() -> (
    None
):
    with ReplayServer(europepmc_handler) as server:
        source = EuropePMC(EuropePMCSettings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert not rejections
    full, no_pmcid, no_pmid = docs
    assert full.text.startswith("Abstract\n\nBackground: Dieulafoy lesions")
    assert "VCE image" not in full.text
    assert full.metadata["figures"][0]["label"] == "Fig. 1"
    assert full.metadata["tables"][0]["caption"] == "Laboratory values on admission."
    assert full.url == "https://europepmc.org/article/PMC/PMC99000001"
    assert no_pmcid.url == "https://pubmed.ncbi.nlm.nih.gov/40000007/"
    assert no_pmid.url == "https://doi.org/10.1136/bcr-2025-40000008"
    assert no_pmcid.text == "Abstract text of the case."  # no full text: the abstract alone


def test_html_superscripts_keep_a_caret_through_the_html_prefilter() -> None:
    """Europe PMC's search records carry HTML (`abstractText`, `title`); Stack Exchange bodies too."""
    doc = Doc(
        source="europepmc",
        source_id="PMC5",
        published=day("2025-03-02"),
        date_field="firstPublicationDate",
        title="Platelets of 900 &#xd7; 10<sup>9</sup>/L",
        text="<h4>Case</h4>Platelets 900 &#xd7; 10<sup>9</sup>/L and pCO<sub>2</sub> 4 kPa; "
        "r<sup>2</sup> &lt; 0.3.",
    )
    cleaned = HtmlStripper()(doc)
    assert isinstance(cleaned, Doc)
    assert cleaned.text == "Case\nPlatelets 900 × 10^9/L and pCO2 4 kPa; r^2 < 0.3."
    assert cleaned.title == "Platelets of 900 × 10^9/L"


def pubmed_fixture(name: str) -> Doc:
    root = parse_xml((FIXTURES / "pubmed" / name).read_bytes())
    doc = parse_article(next(root.iter("PubmedArticle")))
    assert isinstance(doc, Doc)
    return doc


def test_real_pubmed_abstracts_keep_superscripts() -> None:
    telomere = pubmed_fixture("biopython_pubmed4.xml")
    assert telomere.source_id == "27797938"
    assert "(linkage disequilibrium r^2<0.25)" in telomere.text  # not "r2<0.25"
    assert "p trend=0.048" not in telomere.text
    assert "ptrend=0.048" in telomere.text
    assert telomere.title.startswith("Leucocyte telomere length, genetic variants at the TERT gene")
    lactate = pubmed_fixture("biopython_pubmed6.xml")
    assert "67.6 ± 4.1 ml·kg^-1·min^-1]" in lactate.text  # not "ml·kg-1·min-1"
    assert "precision of 0.20 km·h^-1." in lactate.text
    assert "LEmin" in lactate.text
    assert "^min" not in lactate.text


ESEARCH = (
    "<eSearchResult><Count>3</Count><RetMax>0</RetMax><RetStart>0</RetStart><QueryKey>1</QueryKey>"
    "<WebEnv>MCID_1</WebEnv><IdList/></eSearchResult>"
)


async def test_an_empty_efetch_page_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    def handler(path: str, query: dict[str, str]) -> Reply:
        if path == "/esearch.fcgi":
            return Reply.xml(ESEARCH)
        return Reply.xml('<?xml version="1.0" ?>\n<PubmedArticleSet></PubmedArticleSet>\n')

    caplog.set_level(logging.WARNING, logger="livemed.sources.pubmed")
    with ReplayServer(handler) as server:
        source = PubMed(PubMedSettings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-02")))
    assert docs == []
    assert [(r.reason, r.record_id) for r in rejections] == [
        ("empty_page", "pubmed:efetch:2025-03-01..2025-03-02@0")
    ]
    assert "2025-03-01..2025-03-02 at retstart 0" in rejections[0].detail
    assert any("efetch returned no articles" in r.getMessage() for r in caplog.records)


def se_fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "stackexchange" / name).read_text(encoding="utf-8"))
    return data


async def test_stackexchange_strings_are_decoded_once() -> None:
    def handler(path: str, query: dict[str, str]) -> Reply:
        return Reply.json(
            se_fixture("search_advanced.json" if path == "/search/advanced" else "answers.json")
        )

    with ReplayServer(handler) as server:
        source = StackExchange(StackExchangeSettings(base_url=server.url, **FAST))
        docs, rejections = await collect(source.harvest(day("2025-03-01"), day("2025-03-31")))
    assert not rejections
    doc = docs[0]
    assert doc.metadata["attribution"]["author"] == 'João "JJ" O\'Neill'
    assert doc.metadata["tags"] == ["pharmacology", "drug-interactions", "a&e"]
    assert doc.title == "Is ibuprofen safe with lisinopril if eGFR is < 60 & I'm 68?"
    assert doc.replies[0].author == "Dr. Zoë Müller"
    assert doc.url == doc.metadata["attribution"]["link"]
    assert doc.url is not None
    assert doc.url.endswith("/35001/is-ibuprofen-safe-with-lisinopril-if-egfr-is-60")
    cleaned = HtmlStripper()(doc)  # the body is HTML: the html pre-filter decodes it, once
    assert isinstance(cleaned, Doc)
    assert "the lab wrote &lt;60 on the report" in cleaned.text  # `&amp;lt;` is the text "&lt;"
    assert "lisinopril 10\xa0mg" in cleaned.text or "lisinopril 10 mg" in cleaned.text
    assert "knee & back" in cleaned.text
    assert "eGFR is < 60." in cleaned.replies[0].text
    assert cleaned.title == doc.title  # decoded by the source, not again by the pre-filter
