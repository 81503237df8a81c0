"""The controller-audit snapshot is what the pipeline really sends: the Controller's LLM audit is run
on each demo case (one fact and one advice element paraphrased, `render.PARAPHRASED`) with a fake
model that records its prompts, and the recorded messages equal the snapshot byte for byte."""

from __future__ import annotations

import json

import pytest

from livemed.common.prompts import parse_blocks
from livemed.curate.controller import Controller
from livemed.models import LLM, Engine
from livemed.models.base import Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Case, Rejection
from tests.prompts.render import PARAPHRASED, SNAPSHOTS, demo_cases, demo_docs, paraphrased


@pytest.mark.parametrize("case", demo_cases(), ids=lambda c: "report" if c.query_derived else "thread")
async def test_the_snapshot_is_the_audit_the_controller_sends(case: Case) -> None:
    sent: list[list[Message]] = []

    def answer(messages: list[Message], settings: Settings) -> str:
        sent.append(messages)
        return json.dumps({"elements": []})  # grounds nothing: the case is rejected, after both groups

    doc, changed = demo_docs()[case.doc_id], paraphrased(case)
    async with Engine() as engine:
        outcome = await Controller(LLM(engine, FakeModel("fake/audit", function=answer))).audit(changed, doc)
    assert isinstance(outcome, Rejection)
    assert outcome.reason == "ungrounded"
    kind = "report" if case.query_derived else "thread"
    snapshot = (SNAPSHOTS / f"{kind}-controller-audit.txt").read_text(encoding="utf-8")
    assert "".join(f"### {m['role']}\n{m['content']}\n" for call in sent for m in call) == snapshot
    # two calls: the paraphrased fact against the narrative's source, the element against the advice's
    field, n, _, i, _ = PARAPHRASED[case.doc_id]
    elements = [[b.text for b in parse_blocks(call[-1]["content"]) if b.name == "element"] for call in sent]
    assert elements == [[getattr(changed.narrative, field)[n]], [changed.advice[i]]]
    sources = [next(b.text for b in parse_blocks(call[-1]["content"]) if b.name == "source") for call in sent]
    assert "Management:" not in sources[0]
    assert not case.query_derived or "Management:" in sources[1]
