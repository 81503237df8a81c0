"""Strict parsers for judge outputs: non-compliant output is invalid, never coerced.

Pairwise: optional whitespace, one `<think>…</think>` with some reasoning (or reasoning the endpoint
sent apart from the content, in a `reasoning_content`/`reasoning` field), then exactly
`<answer>[[A]]</answer>` or `<answer>[[B]]</answer>` (whitespace allowed inside the tags), then nothing.
Pointwise: the same with `<score>N</score>`, N an integer or one-decimal number from 0 to 10. Anything
else — an empty reply, a `<think>` never closed, text before `<think>` or after the verdict, a missing or
repeated tag, `[[C]]`, `[[A]] or [[B]]`, a score of 11 — is invalid, with a short reason. The parsers
read the reply as it came (`replies.as_sent`), not the text the client made of it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from livemed.records.judging import Slot

PARSE_POLICY = "strict-1"  # the rules below; a change to them is a new policy (part of a verdict's identity)
_THINK = re.compile(r"\A\s*<think>(.*?)</think>", re.DOTALL)
_ANSWER = re.compile(r"\A\s*<answer>\s*\[\[([AB])\]\]\s*</answer>\s*\Z")
_SCORE = re.compile(r"\A\s*<score>\s*(10(?:\.0)?|\d(?:\.\d)?)\s*</score>\s*\Z")


@dataclass(frozen=True)
class Parsed:
    """A verdict (`A`/`B`) or a score, or None with the reason the output is invalid."""

    verdict: Slot | None = None
    score: float | None = None
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.verdict is not None or self.score is not None


def _split(text: str, reasoning: str) -> tuple[str, str] | str:
    """(reasoning, the rest) or the reason the reasoning part is not compliant."""
    if not text.strip() and not reasoning.strip():
        return "empty reply"
    found = _THINK.match(text)
    if found is not None:
        thought, rest = found.group(1).strip(), text[found.end() :]
    elif "<think>" in text:
        return "text before <think>" if "</think>" in text else "unclosed <think> (no </think>)"
    else:
        thought, rest = reasoning.strip(), text
    if not thought:
        return "no reasoning in <think>…</think>"
    if "<think>" in rest or "</think>" in rest:
        return "more than one <think> block"
    return thought, rest


def _after_reasoning(
    text: str, reasoning: str, pattern: re.Pattern[str], tag: str, wanted: str
) -> re.Match[str] | Parsed:
    """The match of the verdict part after the reasoning, or an invalid `Parsed` with its reason."""
    split = _split(text, reasoning)
    if isinstance(split, str):
        return Parsed(reason=split)
    found = pattern.match(split[1])
    return found if found is not None else Parsed(reason=_why(split[1], tag, wanted))


def parse_pairwise(text: str, reasoning: str = "") -> Parsed:
    """The slot a pairwise judge chose, or invalid with a reason."""
    found = _after_reasoning(text, reasoning, _ANSWER, "answer", "[[A]] or [[B]]")
    if isinstance(found, Parsed):
        return found
    return Parsed(verdict="A" if found.group(1) == "A" else "B")


def parse_pointwise(text: str, reasoning: str = "") -> Parsed:
    """The 0–10 score a pointwise judge gave, or invalid with a reason."""
    found = _after_reasoning(text, reasoning, _SCORE, "score", "a number from 0 to 10")
    if isinstance(found, Parsed):
        return found
    return Parsed(score=float(found.group(1)))


def _why(rest: str, tag: str, wanted: str) -> str:
    opened, closed = rest.count(f"<{tag}>"), rest.count(f"</{tag}>")
    if opened == 0 or closed == 0:
        return f"no <{tag}>…</{tag}>"
    if opened > 1 or closed > 1:
        return f"more than one <{tag}>"
    if not rest.rstrip().endswith(f"</{tag}>"):
        return f"text after </{tag}>"
    if not rest.lstrip().startswith(f"<{tag}>"):
        return f"text before <{tag}>"
    return f"<{tag}> does not hold exactly {wanted}"


__all__ = ["PARSE_POLICY", "Parsed", "parse_pairwise", "parse_pointwise"]
