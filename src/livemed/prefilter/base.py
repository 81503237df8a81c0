"""The pre-filter contract: a callable from a Doc to the (possibly cleaned) Doc, or a Rejection."""

from __future__ import annotations

from typing import Protocol

from livemed.records import Doc, Rejection

STAGE = "prefilter"


class Prefilter(Protocol):
    name: str

    def __call__(self, doc: Doc) -> Doc | Rejection: ...


def reject(doc: Doc, reason: str, detail: str = "") -> Rejection:
    """A prefilter Rejection for `doc`, with a reason code."""
    return Rejection(
        stage=STAGE,
        reason=reason,
        detail=detail[:500],
        record_kind="doc",
        record_id=doc.id,
        source=doc.source,
        published=doc.published,
    )
