"""A FakeModel that answers each curation prompt (chosen by the requested schema) with set JSON."""

from __future__ import annotations

import json
from typing import Any

from livemed.models.base import Message, Settings
from livemed.models.fake import FakeModel

GOOD_SCREEN: dict[str, Any] = {
    "narrative": {
        "demographics": ["34-year-old", "woman"],
        "chief_complaint": ["sore throat and fever for three days"],
        "symptoms": ["The pain is worse when swallowing"],
        "onset_duration": ["for three days"],
        "history": ["history of asthma"],
        "medications": ["salbutamol inhaler when needed"],
        "allergies": ["allergic to penicillin"],
    },
    "query": "Should I see a doctor or will this go away on its own?",
    "advice": ["You should drink plenty of fluids and rest.", "Take paracetamol for the pain and fever."],
}
ALL_ITEMS = [
    "age",
    "sex",
    "chief complaint",
    "onset/duration",
    "symptom characteristics",
    "relevant history",
    "medications",
    "allergies",
]


def query_check(present: int = 8, s_cc: bool = True) -> dict[str, Any]:
    items = [{"item": item, "present": n < present} for n, item in enumerate(ALL_ITEMS)]
    return {"rationale": "asks what to do next", "query_type": "management", "s_cc": s_cc, "items": items}


def fake_curator(
    *,
    screen: dict[str, Any] | None = None,
    query: dict[str, Any] | None = None,
    align: list[float] | None = None,
    audit: dict[str, Any] | str | None = None,
) -> FakeModel:
    """Answers the four curation prompts; an `audit` given as text is sent as it is (e.g. not JSON)."""

    def answer(messages: list[Message], settings: Settings) -> str:
        task = (settings.json_schema or {}).get("name")
        if task == "ScreenerOutput":
            return json.dumps(screen if screen is not None else GOOD_SCREEN)
        if task == "QueryCheck":
            return json.dumps(query if query is not None else query_check())
        if task == "AlignmentOutput":
            scores = align if align is not None else [1.0] * 10
            indices = _advice_indices(messages[-1]["content"])
            shown = [{"advice_index": i, "rationale": "scripted", "score": scores[i]} for i in indices]
            return json.dumps({"scores": shown})
        if task == "AuditOutput":
            return audit if isinstance(audit, str) else json.dumps(audit or {"elements": []})
        raise AssertionError(f"unexpected task {task}")

    return FakeModel("fake/curator", function=answer)


def _advice_indices(prompt: str) -> list[int]:
    from livemed.common.prompts import parse_blocks

    return [int(b.attrs["i"]) for b in parse_blocks(prompt) if b.name == "advice"]


class AlwaysEvidence:
    """A retriever that returns one fixed passage for any query."""

    name = "always"

    async def search(self, query: str, *, k: int = 3) -> list[Any]:
        from livemed.records import EvidenceRef

        return [EvidenceRef(id="ev:any", snippet="Some evidence.")]
