"""Safe XML parsing for harvested responses, and plain text from PubMed and JATS markup.

The parser never resolves entities, never loads a DTD and never touches the network, so a hostile
response cannot read local files or make requests (XXE) or blow up memory (entity expansion).

Inline markup keeps its meaning in the text (`inline_text`): a superscript is written after a caret,
`10<sup>9</sup>/L` -> `10^9/L` and `r<sup>2</sup>` -> `r^2`, because joining it to the base would make
another number ("109/L"); a caret is plain ASCII, so later regex and lexical matching see `10^9` as
one token pair rather than a Unicode superscript digit that tokenisers drop or fold. A subscript is
joined without a marker (`CO<sub>2</sub>` -> `CO2`, `HbA<sub>1c</sub>` -> `HbA1c`): that is how these
names are written in plain text, and no subscript in clinical text changes a value when joined.
Numbered reference markers (`<xref ref-type="bibr">`) go, with the brackets, commas and dashes that
only they filled; author-year citations keep their text ("Smith et al. 2015").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

SUPERSCRIPT = "^"
_WS = re.compile(r"\s+")
_REF = "\x00"  # stands for a dropped reference marker until the brackets it leaves are cleaned up
_NUMBERED = re.compile(r"^[\s\d,;\-–—\[\]()]+$")
_REF_GROUP = re.compile(
    r"\s*(?:\[[\s,;\-–—\x00]*\x00[\s,;\-–—\x00]*\]|\([\s,;\-–—\x00]*\x00[\s,;\-–—\x00]*\)"
    r"|\x00(?:[\s,;\-–—]*\x00)*)"
)
_DIGITS = re.compile(r"\d+")
# JATS elements whose text is not part of the narrative (captions and tables go to metadata).
_SKIP = frozenset(
    {
        "table-wrap",
        "table-wrap-group",
        "fig",
        "fig-group",
        "ref-list",
        "supplementary-material",
        "graphic",
        "inline-graphic",
        "media",
        "label",
        "fn-group",
        "disp-formula",
        "alternatives",
        "object-id",
    }
)
_BLOCKS = frozenset({"p", "title"})
_SKIP_SECTIONS = frozenset({"supplementary-material", "display-objects"})  # `<sec sec-type=…>`


def parse_xml(data: bytes) -> etree._Element:
    """Parse untrusted XML bytes; raises etree.XMLSyntaxError on malformed input."""
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False
    )
    return etree.fromstring(data, parser=parser)


def text_of(element: etree._Element | None) -> str:
    """All text inside an element, whitespace collapsed (markup joined as it stands)."""
    if element is None:
        return ""
    return _WS.sub(" ", "".join(str(t) for t in element.itertext())).strip()


def local(tag: object) -> str:
    """A tag name without its namespace."""
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def inline_text(element: etree._Element | None, skip: frozenset[str] = frozenset()) -> str:
    """The text of an element with `<sup>` kept as `^`, reference markers and `skip` elements dropped.

    Line breaks and runs of whitespace become one space: a paragraph is one line of text.
    """
    if element is None:
        return ""
    parts: list[str] = []
    _walk(element, parts, skip)
    text = _REF_GROUP.sub("", "".join(parts))
    return _WS.sub(" ", text).strip()


def _walk(element: etree._Element, parts: list[str], skip: frozenset[str]) -> None:
    parts.append(element.text or "")
    for child in element:
        name = local(child.tag)
        if name in skip or not isinstance(child.tag, str):
            pass  # comments and processing instructions carry no text; skipped elements neither
        elif name == "xref" and child.get("ref-type") == "bibr" and _numbered(text_of(child)):
            parts.append(_REF)
        elif name == "sup":
            inner: list[str] = []
            _walk(child, inner, skip)
            joined = "".join(inner)
            bare = _WS.sub("", joined)
            if bare.strip(",;-–—[]()" + _REF) == "" and _REF in bare:
                parts.append(_REF)  # a superscript citation: "pain<sup>1,2</sup>"
            elif bare:
                parts.append(SUPERSCRIPT + bare)
        else:
            _walk(child, parts, skip)
        parts.append(child.tail or "")


def _numbered(marker: str) -> bool:
    """A numbered reference marker ("3", "1-4", "[2, 5]"), not the year of an author-year citation."""
    if not marker:
        return True
    return bool(_NUMBERED.match(marker)) and all(len(d) <= 3 for d in _DIGITS.findall(marker))


@dataclass
class JatsText:
    """A JATS article's abstract and body text, and the captions kept out of them."""

    body: str = ""
    abstract: str = ""
    figures: list[dict[str, str]] = field(default_factory=list)
    tables: list[dict[str, str]] = field(default_factory=list)

    def text(self, abstract: str = "") -> str:
        """The abstract (this article's, else `abstract`) under an "Abstract" heading, then the body;
        blocks are separated by a blank line."""
        heading = self.abstract or abstract.strip()
        if not self.body:
            return heading
        return f"Abstract\n\n{heading}\n\n{self.body}" if heading else self.body


def jats_text(article: etree._Element) -> JatsText:
    """A JATS article as text: section titles and paragraphs of the body, and the abstract.

    Figures, tables, labels, numbered reference markers and supplementary material stay out of the
    text; figure and table captions are returned in `figures` and `tables`.
    """
    body = _first(article, "body")
    return JatsText(
        body="\n\n".join(_blocks(body)) if body is not None else "",
        abstract=jats_abstract_text(article),
        figures=_captions(body, frozenset({"fig"})),
        tables=_captions(body, frozenset({"table-wrap"})),
    )


def jats_body_text(article: etree._Element) -> str:
    """The body alone: section titles and paragraphs separated by a blank line."""
    body = _first(article, "body")
    return "\n\n".join(_blocks(body)) if body is not None else ""


def jats_abstract_text(article: etree._Element) -> str:
    """The article's abstract (not a graphical abstract or teaser): its paragraphs, with section titles
    as "Title: text"."""
    meta = _first(article, "article-meta")
    if meta is None:
        return ""
    for abstract in meta:
        if local(abstract.tag) == "abstract" and abstract.get("abstract-type") in (None, "abstract"):
            return "\n\n".join(_abstract_blocks(abstract))
    return ""


def _abstract_blocks(abstract: etree._Element) -> list[str]:
    out: list[str] = []
    heading = ""
    for element in _block_elements(abstract):
        text = inline_text(element, _SKIP)
        if not text:
            continue
        if local(element.tag) == "title":
            heading = "" if text.lower() == "abstract" else text
            continue
        out.append(f"{heading}: {text}" if heading else text)
        heading = ""
    return out


def _blocks(body: etree._Element) -> list[str]:
    return [t for e in _block_elements(body) if (t := inline_text(e, _SKIP))]


def _block_elements(root: etree._Element) -> list[etree._Element]:
    """Titles and outermost paragraphs under `root`, in document order, none inside a skipped element."""
    found = []
    for element in root.iter():
        if local(element.tag) in _BLOCKS and not _inside(element, root, _SKIP | _BLOCKS):
            found.append(element)
    return found


def _captions(body: etree._Element | None, kinds: frozenset[str]) -> list[dict[str, str]]:
    if body is None:
        return []
    out = []
    for element in body.iter():
        if local(element.tag) in kinds:
            label = next((text_of(c) for c in element if local(c.tag) == "label"), "")
            caption = next((inline_text(c, _SKIP) for c in element if local(c.tag) == "caption"), "")
            if label or caption:
                out.append({"id": element.get("id") or "", "label": label, "caption": caption})
    return out


def _first(root: etree._Element, name: str) -> etree._Element | None:
    return next((e for e in root.iter() if local(e.tag) == name), None)


def _inside(element: etree._Element, stop: etree._Element, names: frozenset[str]) -> bool:
    parent = element.getparent()
    while parent is not None and parent is not stop:
        if local(parent.tag) in names or parent.get("sec-type") in _SKIP_SECTIONS:
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
