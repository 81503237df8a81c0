"""Safe XML parsing for harvested responses, and plain text from JATS articles.

The parser never resolves entities, never loads a DTD and never touches the network, so a hostile
response cannot read local files or make requests (XXE) or blow up memory (entity expansion).
"""

from __future__ import annotations

import re

from lxml import etree

_WS = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
# JATS elements whose text is not part of the narrative.
_SKIP = {"xref", "table-wrap", "fig", "ref-list", "supplementary-material", "graphic", "media", "label"}


def parse_xml(data: bytes) -> etree._Element:
    """Parse untrusted XML bytes; raises etree.XMLSyntaxError on malformed input."""
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False
    )
    return etree.fromstring(data, parser=parser)


def text_of(element: etree._Element | None) -> str:
    """All text inside an element, whitespace collapsed."""
    if element is None:
        return ""
    return _WS.sub(" ", "".join(str(t) for t in element.itertext())).strip()


def local(tag: object) -> str:
    """A tag name without its namespace."""
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def jats_body_text(article: etree._Element) -> str:
    """The narrative of a JATS article: section titles and paragraphs of <body>, one per line."""
    body = next((e for e in article.iter() if local(e.tag) == "body"), None)
    if body is None:
        return ""
    lines: list[str] = []
    for element in body.iter():
        name = local(element.tag)
        if name in ("title", "p") and not _inside_skipped(element, body):
            line = text_of(element)
            if line:
                lines.append(line)
    return _BLANK_LINES.sub("\n", "\n".join(lines)).strip()


def _inside_skipped(element: etree._Element, stop: etree._Element) -> bool:
    parent = element.getparent()
    while parent is not None and parent is not stop:
        if local(parent.tag) in _SKIP:
            return True
        parent = parent.getparent()
    return False


def jats_licence(article: etree._Element) -> str | None:
    """The licence URL (or type) of a JATS article, if stated."""
    for element in article.iter():
        name = local(element.tag)
        if name == "license_ref" and (element.text or "").strip():
            return (element.text or "").strip()
        if name == "license":
            href = next((v for k, v in element.attrib.items() if local(k) == "href"), None)
            if href:
                return str(href)
            kind = element.get("license-type")
            if kind:
                return kind
    return None
