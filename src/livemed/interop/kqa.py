"""K-QA (Manes et al. 2024) → livemed cases, with the physicians' statements as a reference rubric.

`questions_w_answers.jsonl` rows have `Question`, `Free_form_answer` (the physician's answer),
`Must_have` and `Nice_to_have` (physician statements). Each row becomes a `Case` (source "k-qa",
source_id a hash of the question, empty narrative — K-QA questions carry none — query = Question,
advice = the answer split into self-contained sentences; a line ending in ":" prefixes the bullet
lines under it). `Must_have`/`Nice_to_have` are kept as a *reference rubric* (store state namespace
`reference_rubric`), so generated rubrics can be checked against them (`check.reference_coverage`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from livemed.common.text import sentences
from livemed.errors import InputFileError
from livemed.interop import fields
from livemed.jsonl import parse_objects
from livemed.records import Case, Narrative, Provenance, short_hash

SOURCE = "k-qa"
REFERENCE_NAMESPACE = "reference_rubric"
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@dataclass(frozen=True)
class KqaItem:
    case: Case
    must_have: list[str]
    nice_to_have: list[str]

    def reference(self) -> dict[str, Any]:
        return {"source": SOURCE, "must_have": self.must_have, "nice_to_have": self.nice_to_have}


def advice_elements(answer: str) -> list[str]:
    """The physician's answer as self-contained sentences (bullets keep their lead-in line)."""
    elements: list[str] = []
    lead = ""
    for raw_line in answer.splitlines():
        line = raw_line.strip()
        if not line:
            continue
        if _BULLET.match(line):
            text = _BULLET.sub("", line)
            elements.append(f"{lead} {text}".strip() if lead else text)
            continue
        lead = line if line.endswith(":") else ""
        if not lead:
            elements.extend(sentences(line, cut="capitals"))  # "e.g. the" stays whole
    return elements


def _statements(value: Any, field: str, limit: int | None) -> list[str]:
    statements = fields.string_list(value, field)
    fields.at_most(statements, field, limit, "[import] max_criteria, --max-criteria")
    return [v.strip() for v in statements if v.strip()]


def parse_row(
    data: dict[str, Any], *, published: datetime, date_field: str, max_statements: int | None = None
) -> KqaItem:
    """One K-QA row → a case and its reference statements; raises ValueError naming the field at fault.

    `max_statements`: refuse more `Must_have` (or `Nice_to_have`) statements than this."""
    question = fields.text(data.get("Question"), "Question", required=False)
    answer = fields.text(data.get("Free_form_answer"), "Free_form_answer", required=False)
    if not question:
        raise ValueError("Question: missing or empty")
    advice = advice_elements(answer)
    if not advice:
        raise ValueError("Free_form_answer: missing or empty (unanswered questions cannot become cases)")
    source_id = short_hash(question, length=12)
    case = Case(
        doc_id=f"{SOURCE}:{source_id}",
        source=SOURCE,
        source_id=source_id,
        published=published,
        date_field=date_field,
        narrative=Narrative(),
        query=question,
        advice=advice,
        status="accepted",
        provenance=Provenance(settings={"imported_from": SOURCE}),
    )
    return KqaItem(
        case,
        _statements(data.get("Must_have"), "Must_have", max_statements),
        _statements(data.get("Nice_to_have"), "Nice_to_have", max_statements),
    )


def read_kqa(
    path: Path,
    *,
    published: datetime,
    date_field: str,
    max_record_bytes: int | None = None,
    max_statements: int | None = None,
) -> Iterator[KqaItem | InputFileError]:
    """Stream a K-QA JSONL file: an item per good row, an error naming file:line otherwise (a line over
    `max_record_bytes` or with more than `max_statements` statements in a list is one such error)."""
    return parse_objects(
        path,
        lambda data: parse_row(
            data, published=published, date_field=date_field, max_statements=max_statements
        ),
        max_bytes=max_record_bytes,
        limit_name="[import] max_record_bytes, --max-record-bytes",
    )
