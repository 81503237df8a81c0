"""Scripted curation replies that the prompts' old defects let through: each is caught now.

The Screener cuts a case report's narrative at the decision point and puts the respondent's
assessment with the advice; the Validator reads checklist replies by name, key or number, checks s_cc
against the query type and numbers the advice it shows from 0; the Controller refuses a quote that
exists but does not state its element, and grounds narrative facts only in the asker's post.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from livemed.common.prompts import parse_blocks
from livemed.config import Thresholds
from livemed.curate.controller import narrative_source, states
from livemed.curate.screener import SCREENER_PROMPT, Screener
from livemed.curate.validator import DEFAULT_CHECKLIST, ItemCheck, Validator, present_items
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Case, EvidenceRef, Rejection
from tests.curate.conftest import make_chain, report, thread
from tests.curate.fakes import GOOD_SCREEN, AlwaysEvidence, fake_curator, query_check

REPORT_SCREEN: dict[str, Any] = {
    "narrative": {
        "demographics": ["58-year-old man"],
        "chief_complaint": ["crushing chest pain for two hours"],
        "history": ["history of hypertension"],
        "medications": ["amlodipine 5 mg daily"],
        "exam_labs": ["The ECG showed ST elevation in the anterior leads and troponin was raised"],
        "timeline": [
            "He was treated with aspirin and urgent percutaneous coronary intervention",
            "He was discharged on dual antiplatelet therapy and a statin",
        ],
    },
    "query": "What is the most likely diagnosis, and how should this patient be managed?",
    "assessment": ["consistent with an anterior myocardial infarction"],
    "advice": ["He was treated with aspirin and urgent percutaneous coronary intervention"],
}


async def test_a_screener_reply_with_the_outcome_in_the_narrative_is_caught() -> None:
    screener = Screener(LLM(Engine(), fake_curator(screen=REPORT_SCREEN), stage="screener"))
    case = await screener.screen(report())
    assert isinstance(case, Case)
    assert case.narrative.timeline == []  # the treatment given and the discharge are past the decision point
    assert case.narrative.exam_labs == REPORT_SCREEN["narrative"]["exam_labs"]
    assert case.narrative.history == ["history of hypertension"]
    dropped = [f for f in case.findings if "past the decision point" in f]
    assert len(dropped) == 2
    assert all("narrative.timeline" in f for f in dropped)
    # the assessment is gradable: it joins the advice, first
    assert case.advice == [*REPORT_SCREEN["assessment"], *REPORT_SCREEN["advice"]]


async def test_past_history_in_a_thread_is_never_cut() -> None:
    screen = copy.deepcopy(GOOD_SCREEN)
    screen["narrative"]["history"] = ["I was diagnosed with asthma as a child"]
    case = await Screener(LLM(Engine(), fake_curator(screen=screen))).screen(thread())
    assert isinstance(case, Case)
    assert case.narrative.history == ["I was diagnosed with asthma as a child"]


def test_the_screener_prompt_names_its_rules() -> None:
    for rule in (
        "Cut the narrative at the decision point",
        "narrative facts come ONLY from the asker's post",
        "exactly one field, as a contiguous span",
        "family_history, social_history",
        'exempt from "do not infer"',
        "a diagnostic query never names the diagnosis",
        "assessment: the respondent's assessment or likely diagnosis",
    ):
        assert rule in SCREENER_PROMPT, rule


def _items(names: list[str], indices: list[int | None] | None = None) -> list[dict[str, Any]]:
    indices = indices or [None] * len(names)
    return [{"index": i, "item": n, "present": True} for n, i in zip(names, indices, strict=True)]


async def _validated(items: list[dict[str, Any]], **check: Any) -> Case | Rejection:
    query = {
        "rationale": "scripted",
        "query_type": check.get("query_type", "management"),
        "s_cc": check.get("s_cc", True),
        "items": items,
    }
    return await make_chain(fake_curator(query=query), retriever=AlwaysEvidence())(thread())


async def test_a_validator_reply_with_the_narratives_keys_scores_the_true_sufficiency() -> None:
    keys = [
        "age",
        "gender",
        "chief_complaint",
        "onset_duration",
        "symptoms",
        "history",
        "medications",
        "allergies",
    ]
    case = await _validated(_items(keys))
    assert isinstance(case, Case), case
    assert case.validation is not None
    assert case.validation.s_inf == 1.0
    assert not [f for f in case.findings if f.startswith("validator:")]


async def test_numbered_names_and_bare_indices_count_and_unknown_items_are_logged() -> None:
    numbered = [f"{n + 1}. {item.title()}:" for n, item in enumerate(DEFAULT_CHECKLIST)]
    present, misses = present_items(DEFAULT_CHECKLIST, [ItemCheck(**i) for i in _items(numbered)])
    assert present == set(range(len(DEFAULT_CHECKLIST)))
    assert misses == []
    by_index = [ItemCheck(index=n, item="", present=True) for n in range(len(DEFAULT_CHECKLIST))]
    assert present_items(DEFAULT_CHECKLIST, by_index)[0] == set(range(len(DEFAULT_CHECKLIST)))
    stray = [ItemCheck(item="shoe size", present=True)]
    assert present_items(DEFAULT_CHECKLIST, stray) == (
        set(),
        ["validator: checklist reply item 'shoe size' (index None) matched no item"],
    )


async def test_an_s_cc_that_contradicts_the_query_type_is_not_clinical() -> None:
    outcome = await _validated(query_check()["items"], query_type="non_clinical", s_cc=True)
    assert isinstance(outcome, Rejection)
    assert outcome.reason == "invalid_query"
    assert "query type non_clinical" in outcome.detail


class SomeEvidence:
    """Evidence for every advice element except those mentioning `missing`."""

    name = "some"

    def __init__(self, missing: str) -> None:
        self.missing = missing

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        return [] if self.missing in query else [EvidenceRef(id=f"ev:{len(query)}", snippet="Evidence.")]


async def test_advice_shown_to_the_model_is_numbered_from_0_and_mapped_back() -> None:
    advice = ["Drink fluids.", "Rest at home.", "Take paracetamol.", "See a doctor after three days."]
    seen: list[list[str]] = []

    def answer(messages: list[Message], settings: Settings) -> str:
        shown = parse_blocks(messages[-1]["content"])
        seen.append([b.attrs["i"] for b in shown if b.name == "advice"])
        # element "Rest at home." has no evidence: shown are positions 0, 2, 3 as 0, 1, 2
        scores = [{"advice_index": 0, "rationale": "stated", "score": 1.0}]
        scores.append({"advice_index": 1, "rationale": "in general terms", "score": 0.5})
        scores.append(
            {"advice_index": 2, "rationale": "says the opposite", "score": 0.0, "contradicted": True}
        )
        return json.dumps({"scores": scores})

    validator = Validator(LLM(Engine(), FakeModel("fake/v", function=answer)))
    checks = await validator.align(advice, SomeEvidence(missing="Rest"))
    assert checks is not None
    assert seen == [["0", "1", "2"]]
    assert [(c.advice_index, c.score, c.contradicted) for c in checks] == [
        (0, 1.0, False),
        (1, 0.0, False),  # no evidence retrieved: 0.0 without asking
        (2, 0.5, False),
        (3, 0.0, True),  # contradicting evidence, recorded apart from "no evidence"
    ]
    assert checks[1].rationale == "no evidence retrieved"


async def test_a_quote_that_exists_but_does_not_state_the_element_is_refused() -> None:
    screen = copy.deepcopy(GOOD_SCREEN)
    screen["advice"].append("Gargle warm salt water every few hours.")  # no reply says it
    elsewhere = "Avoid amoxicillin because of your penicillin allergy."  # in the reply, about something else
    audit = {"elements": [{"index": 2, "rationale": "stated", "grounded": True, "quote": elsewhere}]}
    outcome = await make_chain(fake_curator(screen=screen, audit=audit), audit=True)(thread())
    assert isinstance(outcome, Rejection)
    assert outcome.reason == "ungrounded"
    assert "advice: Gargle warm salt water every few hours." in outcome.detail
    assert "refused advice: quote 'Avoid amoxicillin" in outcome.detail
    assert not states(elsewhere, "Gargle warm salt water every few hours.")
    assert states("See a doctor if the fever lasts more than three days", "Get care when fever lasts 3 days")


async def test_narrative_facts_are_grounded_only_in_the_askers_post() -> None:
    screen = copy.deepcopy(GOOD_SCREEN)
    screen["narrative"]["timeline"] = ["This sounds like a viral throat infection"]  # the physician's words
    outcome = await make_chain(fake_curator(screen=screen), thresholds=Thresholds())(thread())
    assert isinstance(outcome, Rejection)
    assert (outcome.stage, outcome.reason) == ("controller", "ungrounded")
    assert "timeline: This sounds like a viral throat infection" in outcome.detail
    assert "viral throat infection" not in narrative_source(thread())
    assert "discharged" not in narrative_source(
        report(text="Case presentation: chest pain.\nOutcome: discharged.")
    )
