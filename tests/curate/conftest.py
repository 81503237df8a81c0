"""Documents, an evidence corpus and chain builders shared by the curation tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from livemed.config import Thresholds
from livemed.curate.baseline import CurationBaseline
from livemed.curate.chain import Chain
from livemed.curate.controller import Controller
from livemed.curate.screener import Screener
from livemed.curate.validator import Validator
from livemed.evidence.bm25 import BM25Retriever
from livemed.evidence.corpus import Passage
from livemed.models import LLM, Engine
from livemed.models.base import Model
from livemed.records import Doc, Reply, ReplyRole

POST = (
    "I am a 34-year-old woman. I have had a sore throat and fever for three days. "
    "The pain is worse when swallowing and my neck glands are swollen. "
    "I have a history of asthma. I take a salbutamol inhaler when needed. "
    "I am allergic to penicillin. Should I see a doctor or will this go away on its own?"
)
ANSWER = (
    "This sounds like a viral throat infection, but strep throat is possible. "
    "You should drink plenty of fluids and rest. Take paracetamol for the pain and fever. "
    "See a doctor if the fever lasts more than three days or you have difficulty breathing. "
    "Avoid amoxicillin because of your penicillin allergy."
)
REPORT = (
    "A 58-year-old man presented with crushing chest pain for two hours. He had a history of hypertension "
    "and was taking amlodipine 5 mg daily. He had no known drug allergies. The ECG showed ST elevation in "
    "the anterior leads and troponin was raised, consistent with an anterior myocardial infarction. "
    "He was treated with aspirin and urgent percutaneous coronary intervention. He was discharged on "
    "dual antiplatelet therapy and a statin."
)
PASSAGES = [
    Passage(
        id="ev:sore-throat",
        title="Sore throat",
        text=(
            "Most sore throats are caused by viruses and get better on their own. Drink plenty of fluids "
            "and rest. Paracetamol or ibuprofen can relieve the pain and fever of a sore throat. See a "
            "doctor if the fever lasts more than three days or you have difficulty breathing."
        ),
        url="https://example.org/sore-throat",
        licence="CC BY 4.0",
    ),
    Passage(
        id="ev:penicillin",
        title="Penicillin allergy",
        text="People with a penicillin allergy should avoid amoxicillin and other penicillin antibiotics.",
        licence="CC BY 4.0",
    ),
    Passage(
        id="ev:mi",
        title="Heart attack treatment",
        text=(
            "A heart attack (myocardial infarction) is treated with aspirin and urgent percutaneous "
            "coronary intervention to reopen the artery. Afterwards patients take dual antiplatelet "
            "therapy and a statin."
        ),
        licence="CC BY 4.0",
    ),
    Passage(
        id="ev:reflux",
        title="Acid reflux",
        text=(
            "To ease acid reflux, avoid large meals in the evening and take an antacid after meals. "
            "See your doctor if you lose weight or have trouble swallowing."
        ),
    ),
]


def thread(
    source_id: str = "t1",
    *,
    post: str = POST,
    answer: str | None = ANSWER,
    role: ReplyRole = ReplyRole.PHYSICIAN,
    source: str = "forum",
) -> Doc:
    replies = [Reply(role=ReplyRole.OTHER, text="I had the same, honey and lemon helped me.")]
    if answer is not None:
        replies.append(Reply(role=role, text=answer, author="Dr. A"))
    return Doc(
        source=source,
        source_id=source_id,
        url=f"https://forum.example/{source_id}",
        published=datetime(2026, 10, 1, tzinfo=UTC),
        doc_type="thread",
        title="Sore throat and fever",
        text=post,
        replies=replies,
        language="en",
    )


def report(source_id: str = "r1", text: str = REPORT) -> Doc:
    return Doc(
        source="journal",
        source_id=source_id,
        published=datetime(2026, 9, 1, tzinfo=UTC),
        doc_type="case_report",
        title="Anterior STEMI in a hypertensive man",
        text=text,
    )


def make_chain(
    model: Model,
    *,
    retriever: Any = None,
    thresholds: Thresholds | None = None,
    audit: bool = False,
    engine: Engine | None = None,
) -> Chain:
    engine = engine or Engine()
    return Chain(
        screener=Screener(LLM(engine, model, stage="screener")),
        validator=Validator(LLM(engine, model, stage="validator")),
        controller=Controller(LLM(engine, model, stage="controller") if audit else None),
        retriever=retriever if retriever is not None else BM25Retriever(PASSAGES),
        thresholds=thresholds or Thresholds(),
    )


def baseline_chain(**kwargs: Any) -> Chain:
    return make_chain(CurationBaseline(), **kwargs)


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "evidence.jsonl"
    path.write_text("".join(json.dumps(p.model_dump()) + "\n" for p in PASSAGES), encoding="utf-8")
    return path
