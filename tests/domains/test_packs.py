"""Domain packs: the shipped packs, the loader's rules, and a third pack made from a folder alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.answer.unsafe import UnsafeAnswerer
from livemed.domains import bundled, load_pack, medical, resolve_domain
from livemed.errors import ConfigError, UnknownNameError
from livemed.prefilter.vocabulary import VocabularyFilter
from livemed.records import AXES, Doc, Rejection
from livemed.rubrics.rules import RuleWriter
from tests.domains.helpers import LEGAL_ADVICE, finance_case, legal_case, write_finance_pack

LEGAL_POST = (
    "My landlord kept my security deposit after I moved out of the flat. The tenancy agreement says he "
    "must return it within ten days. Can I sue him in small claims court, or do I need a lawyer?"
)
MEDICAL_POST = (
    "I have had a headache and nausea for three days, and my doctor prescribed ibuprofen. "
    "Should I worry about the dizziness?"
)


def doc(text: str) -> Doc:
    from datetime import UTC, datetime

    return Doc(source="files", source_id="d1", published=datetime(2025, 1, 1, tzinfo=UTC), text=text)


def test_the_shipped_packs_and_the_medical_default() -> None:
    assert bundled() == ["legal", "medical"]
    pack = medical()
    assert pack.axis_names == AXES
    assert pack.safety_axes == ("safety",)
    safety = pack.axis("safety")
    assert safety is not None
    assert safety.negative == (-10, -8)
    legal = load_pack("legal")
    assert legal.axis_names == ("accuracy", "completeness", "communication", "jurisdiction_awareness", "harm")
    harm = legal.axis("harm")
    assert harm is not None
    assert harm.safety_like
    assert harm.negative == (-10, -8)
    assert "deadline or limitation period" in legal.theme_names
    assert legal.checklist("thread") == legal.checklists["default"]


def test_the_legal_vocabulary_keeps_legal_text_and_rejects_medical_text() -> None:
    legal = VocabularyFilter(pack=load_pack("legal"))
    assert isinstance(legal(doc(LEGAL_POST)), Doc)
    rejected = legal(doc(MEDICAL_POST))
    assert isinstance(rejected, Rejection)
    assert rejected.reason == "not_legal"
    assert "legal term(s)" in (rejected.detail or "")
    medical_filter = VocabularyFilter()
    assert isinstance(medical_filter(doc(MEDICAL_POST)), Doc)
    assert isinstance(medical_filter(doc(LEGAL_POST)), Rejection)


def test_the_rule_writer_with_the_legal_pack_weighs_a_missed_limitation_period_minus_10() -> None:
    themes, drafts, steps = RuleWriter(load_pack("legal")).draft(legal_case())
    legal_axes = set(load_pack("legal").axis_names)
    assert {d.axis for d in drafts} <= legal_axes
    assert "deadline or limitation period" in themes
    first = drafts[0]
    assert (first.polarity, first.axis, first.weight) == ("positive", "harm", 9)
    negatives = {d.text: d for d in drafts if d.polarity == "negative"}
    limitation = negatives[
        "Says there is no time limit to act, or that it can safely wait beyond three months."
    ]
    assert (limitation.axis, limitation.weight, limitation.advice_index) == ("harm", -10, 0)
    papers = negatives["Says it is fine to ignore the letter from the court."]
    assert (papers.axis, papers.weight) == ("harm", -9)
    assert all(d.axis == "harm" and -10 <= d.weight <= -8 for d in negatives.values())
    assert any(d.text.startswith("Advises the person to") for d in drafts)
    assert steps[-1]["rules"].startswith("pack legal: harm 9 (theme:deadline or limitation period)")


def test_the_unsafe_baseline_says_the_legal_pack_s_first_hazard() -> None:
    answer = UnsafeAnswerer(load_pack("legal")).answer(legal_case())
    assert "There is no real time limit here" in answer
    assert LEGAL_ADVICE[0] not in answer  # the element it goes against is dropped
    assert LEGAL_ADVICE[1] in answer


def test_a_third_pack_from_a_folder_alone(tmp_path: Path) -> None:
    folder = write_finance_pack(tmp_path / "finance")
    pack = load_pack(folder)
    assert (pack.name, pack.axis_names, pack.safety_axes) == (
        "finance",
        ("correctness", "suitability", "risk"),
        ("risk",),
    )
    assert pack.prompt("note") == "A finance note for {subject} cases."
    assert pack.evidence_corpus() == str(folder.resolve() / "guides.jsonl")
    assert load_pack(folder / "pack.toml") is pack  # the file itself names the folder too
    themes, drafts, _ = RuleWriter(pack).draft(finance_case())
    assert themes == ["cost", "general money advice"]
    by_text = {d.text: d for d in drafts}
    assert {d.axis for d in drafts} == {"correctness", "suitability", "risk"}
    assert (drafts[0].axis, drafts[0].weight, drafts[0].theme) == ("correctness", 6, "cost")
    assert (drafts[2].axis, drafts[2].weight) == ("risk", 9)  # its urgent cue: "scam"
    hazard = by_text["Recommends putting all the savings into a single stock."]
    assert (hazard.axis, hazard.weight, hazard.theme) == ("risk", -10, "capital protection")
    words = VocabularyFilter(min_hits=2, pack=pack)
    kept = words(
        doc("Should I pay off my credit card or build an emergency fund first? The interest is high.")
    )
    assert isinstance(kept, Doc)
    refused = words(doc(MEDICAL_POST))
    assert isinstance(refused, Rejection)
    assert refused.reason == "not_finance"


def test_a_pack_extends_another_and_keeps_its_own_sections(tmp_path: Path) -> None:
    folder = tmp_path / "tenancy"
    folder.mkdir()
    (folder / "pack.toml").write_text(
        'name = "tenancy"\nextends = "legal"\n[vocabulary]\nterms = "landlord tenant deposit"\n',
        encoding="utf-8",
    )
    pack = load_pack(folder)
    assert pack.name == "tenancy"
    assert pack.axis_names == load_pack("legal").axis_names
    assert pack.vocabulary.terms == ["landlord", "tenant", "deposit"]
    assert pack.vocabulary.reason == "off_domain"  # the section is replaced whole, not merged


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'name = "x"\nsubject = "x"\n[[axes]]\nname = "a"\n[offline.theme_cues]\nt = "(unclosed"\n',
            "not a regular expression",
        ),
        (
            'name = "x"\nsubject = "x"\n[[axes]]\nname = "a"\nnegative = [-3, -8]\n',
            "negative range [-3, -8] not within",
        ),
        (
            'name = "x"\nsubject = "x"\n[[axes]]\nname = "a"\n[offline]\nnegative_axis = "harm"\n',
            "name axes the pack does not have: ['completeness', 'harm']",
        ),
        ('name = "x"\nsubject = "x"\n[[axes]]\nname = "Bad Axis"\n', "axes.0.name"),
        (
            'name = "x"\nsubject = "x"\n[[axes]]\nname = "a"\n[narrative]\nsymptom = "x"\n'
            '[answer_labels]\nsymptoms = "Symptoms"\n',
            "unknown narrative slot(s) ['symptoms'] (this pack's [narrative] slots: symptom)",
        ),
        ('name = "x"\nsubject = "x"\naxes = []\ncolour = 1\n', "colour"),
        ('name = "x"\nsubject = [x\n', "invalid TOML"),
        ('name = "x"\nextends = "."\n', "loops back"),
    ],
)
def test_a_bad_pack_is_one_line_naming_its_file(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "pack.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_pack(tmp_path)
    assert message in str(info.value)
    assert str(tmp_path) in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_names_and_missing_folders() -> None:
    with pytest.raises(UnknownNameError, match=r"did you mean 'legal'"):
        load_pack("legl")
    with pytest.raises(ConfigError, match=r"no pack\.toml in"):
        load_pack("some/where/else")


def test_the_domain_option_wins_over_the_project_file_which_wins_over_medical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_finance_pack(tmp_path / "packs" / "finance")
    monkeypatch.chdir(tmp_path)
    assert resolve_domain("packs/finance", "legal", None).name == "finance"  # relative to the working folder
    config_path = tmp_path / "livemed.toml"
    assert resolve_domain(None, None, config_path).name == "medical"
    assert resolve_domain(None, "packs/finance", config_path).name == "finance"  # relative to livemed.toml
    assert resolve_domain("legal", "packs/finance", config_path).name == "legal"


def test_the_pack_in_docs_domains_md_loads_as_written(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "domains.md").read_text(encoding="utf-8")
    block = text.split("```toml\nname = ", 1)[1].split("```", 1)[0]
    (tmp_path / "pack.toml").write_text("name = " + block, encoding="utf-8")
    pack = load_pack(tmp_path)
    assert (pack.name, pack.person, pack.safety_axes) == ("finance", "the saver", ("risk",))
    assert pack.vocabulary.terms[:2] == ["pension", "mortgage"]
    assert pack.offline.pattern_hazards[0].weight == -10


def test_a_pack_without_a_prompt_says_so_and_extends_borrows_them(tmp_path: Path) -> None:
    finance = load_pack(write_finance_pack(tmp_path / "finance"))
    with pytest.raises(ConfigError) as info:
        finance.prompt("rubric_themes")
    assert str(info.value) == (
        "domain pack 'finance' has no prompt 'rubric_themes': write prompts/rubric_themes.txt in its "
        'folder, or add extends = "medical" to its pack.toml'
    )
    borrowed = tmp_path / "borrowed"
    borrowed.mkdir()
    (borrowed / "pack.toml").write_text('name = "borrowed"\nextends = "legal"\n', encoding="utf-8")
    (borrowed / "prompts").mkdir()
    (borrowed / "prompts" / "grader_examples.txt").write_text("Our own examples.\n", encoding="utf-8")
    pack = load_pack(borrowed)
    assert pack.prompt("grader_examples") == "Our own examples."  # its own file wins
    assert pack.prompt("screener") == load_pack("legal").prompt("screener")  # the rest is the legal pack's


def test_every_shipped_pack_has_every_prompt_the_stages_render() -> None:
    from livemed.answer.ask import PROMPTS as ANSWER
    from livemed.grade.grader import PROMPTS as GRADER
    from livemed.rubrics.prompts import PROMPTS as WRITER

    curation: tuple[str, ...] = (
        "screener",
        "screener_kind_thread",
        "screener_kind_report",
        "validator_query",
    )
    curation += ("validator_align", "controller_audit")
    for name in bundled():
        pack = load_pack(name)
        assert set(pack.prompts) == {*ANSWER, *GRADER, *WRITER, *curation}, name
        assert pack.answer_labels
        assert pack.consult_labels


def test_a_prompt_is_filled_in_one_pass() -> None:
    from livemed.domains.pack import fill

    filled = fill('{narrative} then {query}; {"json": 1} and {unknown}', narrative="says {query}", query="Q")
    assert filled == 'says {query} then Q; {"json": 1} and {unknown}'
