"""HTML and boilerplate stripping (selectolax): markup out, paragraphs kept, sign-offs dropped."""

from __future__ import annotations

import html
import re

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from livemed.prefilter.base import reject
from livemed.records import Doc, Rejection, Reply

_LOOKS_LIKE_HTML = re.compile(r"<[a-zA-Z/!][^>]*>")
_BLOCK_END = re.compile(r"(?i)(<\s*br\s*/?>|</\s*(p|div|li|h[1-6]|tr|blockquote|pre|ul|ol|table)\s*>)")
_DROP_TAGS = ["script", "style", "nav", "footer", "header", "aside", "form", "noscript", "iframe"]
_SPACES = re.compile(r"[ \t\u00a0\r\f\v]+")
_BOILERPLATE = re.compile(
    r"(?ix)^("
    r"sent\ from\ my\ .{1,40}"
    r"|(many\ )?(thanks|thank\ you)(\ in\ advance|\ all|\ everyone)?[\s!.,:)]*"
    r"|(best\ |kind\ |warm\ )?regards[\s,.!]*"
    r"|cheers[\s,.!]*"
    r"|(posted|submitted|last\ edited)\ (by|on)\ .{1,80}"
    r"|(share|reply|quote|report|like|upvote|follow)(\ this)?(\ post|\ thread)?"
    r"|(click\ here|read\ more|subscribe|accept\ (all\ )?cookies|this\ site\ uses\ cookies).{0,120}"
    r"|https?://\S+"
    r")$"
)


def strip_html(text: str) -> str:
    """Plain text from HTML (entities decoded, blocks on their own lines, a superscript after a caret),
    boilerplate lines dropped."""
    if not text:
        return text
    if _LOOKS_LIKE_HTML.search(text):
        tree = HTMLParser(_BLOCK_END.sub(lambda m: "\n" + m.group(0), text))
        tree.strip_tags(_DROP_TAGS)
        for sup in tree.css("sup"):  # 10<sup>9</sup>/L is 10^9/L, not 109/L (as in sources.xml)
            sup.replace_with("^" + sup.text(deep=True).strip())
        root = tree.body or tree.root
        text = root.text(deep=True, separator="") if root is not None else ""
    else:
        text = html.unescape(text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line and not _BOILERPLATE.match(line))


class HtmlStripper:
    name = "html"

    def __call__(self, doc: Doc) -> Doc | Rejection:
        text = strip_html(doc.text)
        if not text:
            return reject(doc, "empty_after_cleaning", "no text left once markup and boilerplate are removed")
        replies = [
            Reply(**{**reply.model_dump(), "text": cleaned})
            for reply in doc.replies
            if (cleaned := strip_html(reply.text))
        ]
        return doc.model_copy(update={"text": text, "title": strip_html(doc.title), "replies": replies})
