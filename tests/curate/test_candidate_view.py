"""The candidate's view: one definition, recorded on the case, that the answer stage and the leak audit
share; the offline Screener keeps what the advice rests on; legal slots named by the legal pack."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from livemed.answer.ask import candidate_messages, conversation
from livemed.common.prompts import parse_blocks
from livemed.curate import leak
from livemed.curate.baseline import CurationBaseline
from livemed.curate.screener import Screener, screener_output
from livemed.curate.view import audit_text, candidate_view
from livemed.domains import load_pack
from livemed.models import LLM, Engine
from livemed.records import Case, Doc, Narrative, Reply, ReplyRole
from tests.curate.conftest import report, thread

DEMO = Path(__file__).parents[2] / "src" / "livemed" / "demo" / "data" / "docs.jsonl"


def demo_doc(source_id: str) -> Doc:
    for line in DEMO.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        if raw["source_id"] == source_id:
            return Doc.model_validate(raw)
    raise AssertionError(source_id)


def screener(**kwargs: object) -> Screener:
    pack = kwargs.pop("pack", None)
    return Screener(LLM(Engine(), CurationBaseline(pack)), pack, **kwargs)  # type: ignore[arg-type]


async def test_the_palpitations_case_shows_the_symptom_coffee_sleep_and_the_fathers_heart_attack() -> None:
    case = await screener().screen(demo_doc("2024-01-palpitations-coffee"))
    assert isinstance(case, Case)
    assert case.view == "narrative"
    view = candidate_view(case)
    for fact in (
        "my heart skipping or fluttering for a few seconds",
        "four or five cups of strong coffee a day",
        "sleeping badly because of stress at work",
        "My father had a heart attack at 70",
    ):
        assert fact in view
    assert case.narrative.chief_complaint  # the complaint has its slot
    assert case.narrative.family_history == ["My father had a heart attack at 70."]
    assert "Family history: My father had a heart attack at 70." in view


async def test_a_post_view_is_recorded_and_read_alike_by_the_answer_stage_the_grader_and_the_leak_audit() -> (
    None
):
    doc = thread()
    case = await screener(views={"forum": "post"}).screen(doc)
    assert isinstance(case, Case)
    assert case.view == "post"
    assert case.post == f"{doc.title}\n\n{doc.text}"
    assert candidate_view(case) == case.post
    assert Case.model_validate_json(case.model_dump_json()) == case  # the view is stored with the case
    (sent,) = candidate_messages(case)
    (block,) = [b for b in parse_blocks(sent["content"]) if b.name == "patient_message"]
    assert block.text.strip() == case.post.strip()
    assert conversation(case) == [{"role": "user", "content": case.post}]
    assert audit_text(case) == case.post  # the post has no template words
    # the leak audit reads the same text: advice copied into the post leaks in the post view only
    copied = case.model_copy(update={"advice": [doc.text.split(". ")[0]]})
    assert leak.audit(copied)[0].leak == 1.0
    as_narrative = copied.model_copy(update={"view": "narrative", "post": None})
    assert leak.audit(as_narrative)[0].leak <= leak.audit(copied)[0].leak
    # the default stays the narrative, and a case report never gets the post view
    assert (await screener().screen(doc)).view == "narrative"  # type: ignore[union-attr]
    assert screener(view="post").view_of(report()) == "narrative"


def test_a_post_view_needs_its_post() -> None:
    case = Case.model_validate_json(OLD_CASE)
    with pytest.raises(ValidationError, match="needs the post"):
        Case.model_validate({**case.model_dump(), "view": "post"})


# A medical case as stores held it before the view and the pack's slots (no `view`, no `post`).
OLD_CASE = json.dumps(
    {
        "schema_version": 1,
        "doc_id": "demo:2024-01-palpitations-coffee",
        "source": "demo",
        "source_id": "2024-01-palpitations-coffee",
        "published": "2024-01-16T09:12:00Z",
        "narrative": {
            "demographics": ["41-year-old", "man"],
            "chief_complaint": [],
            "symptoms": ["I don't get chest pain, shortness of breath or dizziness with it."],
            "onset_duration": [],
            "history": ["My medical history is mild high cholesterol and nothing else."],
            "family_history": [],
            "social_history": [],
            "medications": ["My only medication is atorvastatin 10 mg at night."],
            "allergies": ["I have no known allergies."],
            "exam_labs": [],
            "timeline": [],
        },
        "query": "Should I be worried about these skipped beats, and do I need any tests?",
        "advice": ["I recommend cutting back to one or two cups of coffee a day."],
        "status": "accepted",
    }
)


def test_old_stored_medical_cases_load_unchanged() -> None:
    case = Case.model_validate_json(OLD_CASE)
    assert case.view == "narrative"
    assert case.post is None
    assert case.narrative.medications == ["My only medication is atorvastatin 10 mg at night."]
    assert case.narrative.slot("medications") == case.narrative.medications
    assert case.narrative.model_extra == {}
    stored = json.loads(OLD_CASE)["narrative"]
    assert case.narrative.model_dump() == stored  # written back as it was read
    assert not {"view", "post"} & set(json.loads(case.model_dump_json()))  # stored bytes as before
    assert "Medicines I take: My only medication is atorvastatin 10 mg at night." in candidate_view(case)
    with pytest.raises(ValidationError, match="list of strings"):
        Narrative.model_validate({"parties": "not a list"})


LEGAL_POST = (
    "I rent a flat in Wales as a private tenant. I moved out on 2 March. My landlord kept my whole security "
    "deposit. I have photos of the flat on the day I left. What can I do to get my deposit back?"
)


async def test_legal_cases_carry_the_packs_own_slots_with_jurisdiction_and_the_questions_date() -> None:
    pack = load_pack("legal")
    doc = Doc(
        source="files",
        source_id="l1",
        published=datetime(2025, 4, 11, 8, 30, tzinfo=UTC),
        doc_type="thread",
        title="Landlord kept my deposit",
        text=LEGAL_POST,
        replies=[Reply(role=ReplyRole.VERIFIED, text="You should check whether your deposit was protected.")],
    )
    case = await screener(pack=pack).screen(doc)
    assert isinstance(case, Case), case
    assert case.narrative.slot("jurisdiction") == ["I rent a flat in Wales as a private tenant."]
    assert case.narrative.slot("evidence") == ["I have photos of the flat on the day I left."]
    assert case.narrative.medications == []  # no medical slot holds a legal fact
    assert set(case.narrative.model_extra or {}) <= set(pack.narrative_slots)
    view = candidate_view(case, pack)
    assert "Where I live: I rent a flat in Wales as a private tenant." in view
    assert "Date of my question: 2025-04-11." in view  # the pack's date slot shows the case's own date
    # a Screener reply naming a medical slot does not parse for the legal pack
    with pytest.raises(ValidationError):
        screener_output(pack).model_validate({"narrative": {"medications": ["a lease"]}})
    assert screener_output(pack).model_validate({"narrative": {"documents": ["a lease"]}})


def test_the_view_is_configured_in_livemed_toml_per_source(tmp_path: Path) -> None:
    from livemed.config import load_config
    from livemed.errors import ConfigError

    path = tmp_path / "livemed.toml"
    path.write_text('[curate]\ncandidate_view_by_source = { forum = "post" }\n', encoding="utf-8")
    settings = load_config(path).curate
    assert settings.candidate_view == "narrative"
    chosen = screener(view=settings.candidate_view, views=settings.candidate_view_by_source)
    assert chosen.view_of(thread(source="forum")) == "post"
    assert chosen.view_of(thread(source="other")) == "narrative"
    path.write_text('[curate]\ncandidate_view = "abstract"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="candidate_view"):
        load_config(path)
