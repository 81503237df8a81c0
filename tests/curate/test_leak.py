"""The leak audit: a case whose prompt already states its advice is rejected as `answer_leak`."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

from livemed.analysis.funnel import store_funnel
from livemed.config import Thresholds
from livemed.curate.chain import curate_store
from livemed.curate.leak import audit, check, element_leak, tokens
from livemed.curate.view import audit_text
from livemed.records import Case, Narrative, Rejection
from livemed.store import Store
from tests.curate.conftest import POST, make_chain, thread
from tests.curate.fakes import GOOD_SCREEN, fake_curator

LEAKY_SCREEN = copy.deepcopy(GOOD_SCREEN)
# an LLM Screener that put into the narrative what the asker was told to do: grounded (the post says
# it; the Controller grounds narrative facts only in the post), but the candidate would be shown the answer
LEAKY_SCREEN["narrative"]["timeline"] = ["The pharmacist said to take paracetamol for the pain and fever."]
LEAKY_POST = POST + " The pharmacist said to take paracetamol for the pain and fever."


def _case(narrative: Narrative, advice: list[str], query: str = "What should I do?") -> Case:
    return Case(
        doc_id="forum:x",
        source="forum",
        source_id="x",
        published=datetime(2026, 1, 1, tzinfo=UTC),
        narrative=narrative,
        query=query,
        advice=advice,
    )


def test_an_element_the_narrative_repeats_leaks_fully_with_its_span() -> None:
    case = _case(
        Narrative(
            timeline=["Outcome: her calf swelling settled and she continued apixaban 5 mg twice daily."]
        ),
        ["Continue apixaban 5 mg twice daily for three months.", "Keep walking."],
    )
    first, second = audit(case)
    assert first.leak > 0.6  # the prompt states 6 of its 8 content words, in one run
    assert first.spans == ["continue apixaban 5 mg twice daily"]  # stems match: "continued" too
    assert second.leak == 0.0


def test_words_that_merely_recur_are_not_a_leak() -> None:
    prompt = tokens("I have pain in my knee and my doctor is away. My question: is it serious?")
    leak = element_leak(0, "See a doctor if the knee pain lasts more than a week.", prompt)
    assert leak.leak == 0.0  # "doctor", "knee", "pain" recur but never two content words in a run


def test_the_audit_reads_what_the_candidate_is_sent() -> None:
    case = _case(Narrative(medications=["ibuprofen 400 mg"]), ["Take paracetamol."])
    text = audit_text(case)
    assert "ibuprofen 400 mg" in text
    assert "What should I do?" in text
    assert "Medicines I take" not in text
    assert "Hello doctor" not in text
    imported = case.model_copy(update={"messages": [{"role": "user", "content": "Can I take paracetamol?"}]})
    assert audit_text(imported) == "Can I take paracetamol?"  # an imported conversation as it is


def test_check_rejects_over_the_threshold_and_keeps_at_or_below_it() -> None:
    doc = thread()
    case = _case(Narrative(timeline=["I was told to rest and drink fluids."]), ["Rest and drink fluids."])
    rejected = check(case, doc, 0.6)
    assert isinstance(rejected, Rejection)
    assert (rejected.stage, rejected.reason, rejected.id) == (
        "controller",
        "answer_leak",
        f"controller:{doc.id}",
    )
    assert "'rest and drink fluids'" in rejected.detail
    assert check(case, doc, 1.0) is case


async def test_an_llm_curated_case_that_states_its_advice_is_rejected_and_counted(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    store.put([thread("leaky", post=LEAKY_POST)])
    await curate_store(store, make_chain(fake_curator(screen=LEAKY_SCREEN)))
    store.put([thread("clean")])
    await curate_store(store, make_chain(fake_curator()))
    rejection = store.get(Rejection, "controller:forum:leaky")
    assert rejection is not None
    assert rejection.reason == "answer_leak"
    assert "take paracetamol for the pain and fever" in rejection.detail
    assert store.get(Case, "case:forum:clean") is not None
    rows, reasons = store_funnel(store)
    assert [(r.documents, r.rejected.get("controller"), r.cases) for r in rows] == [(2, 1, 1)]
    assert [(r.stage, r.reason, r.count) for r in reasons] == [("controller", "answer_leak", 1)]


async def test_the_threshold_is_configurable() -> None:
    chain = make_chain(fake_curator(screen=LEAKY_SCREEN), thresholds=Thresholds(answer_leak=1.0))
    assert isinstance(await chain(thread(post=LEAKY_POST)), Case)
    assert Thresholds().answer_leak == 0.7
