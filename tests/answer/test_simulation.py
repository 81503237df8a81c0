"""The simulation baselines: offline/memorised (reference up to its cutoff, retrieval after), the control."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from livemed.analysis.contamination import analyse
from livemed.analysis.cutoffs import CutoffEntry
from livemed.answer.ask import answer_case
from livemed.answer.simulation import DriftControlAnswerer, MemorisedAnswerer
from livemed.evidence.corpus import Passage
from livemed.models import Settings, get_model
from tests.analysis.builders import rows
from tests.builders import make_case

CORPUS = [
    Passage(id="p0", text="Gout flares are treated with colchicine; NSAIDs are avoided in kidney disease."),
    Passage(id="p1", text="Migraine may be relieved by rest in a dark room."),
    Passage(id="p2", text="A swollen, painful big toe with redness is typical of gout."),
]


def test_memorised_answers_from_the_reference_only_up_to_its_cutoff() -> None:
    case = make_case()
    day = case.published.date()
    on_cutoff = get_model("offline/memorised", corpus=CORPUS, cutoff=day)
    before_publication = get_model("offline/memorised", corpus=CORPUS, cutoff=day - timedelta(days=1))
    assert isinstance(on_cutoff, MemorisedAnswerer)
    assert isinstance(before_publication, MemorisedAnswerer)
    assert on_cutoff.answer(case) == "\n".join(case.advice)
    later = before_publication.answer(case)
    assert later != "\n".join(case.advice)
    assert "typical of gout" in later  # the retrieval fallback's passage
    with pytest.raises(ValueError, match="declared cutoff"):
        get_model("offline/memorised", corpus=CORPUS).answer(case)  # type: ignore[attr-defined]


def test_simulations_are_labelled_in_their_answers_provenance() -> None:
    case = make_case()
    memorised = get_model("offline/memorised", corpus=CORPUS, cutoff=case.published.date())
    control = get_model("offline/drift-control", corpus=CORPUS)
    assert isinstance(control, DriftControlAnswerer)
    for answerer in (memorised, control):
        [answer] = asyncio.run(answer_case(case, answerer, settings=Settings()))  # type: ignore[arg-type]
        assert answer.provenance.settings["baseline"] is True
        assert answer.provenance.settings["simulation"] is True
    [plain] = asyncio.run(answer_case(case, get_model("offline/reference"), settings=Settings()))  # type: ignore[arg-type]
    assert "simulation" not in plain.provenance.settings


def test_a_simulation_source_marks_the_contamination_row() -> None:
    data = rows("m/sim", [0.5] * 4, days=[0, 1, 2, 3]) + rows("m/real", [0.5] * 4, days=[0, 1, 2, 3])
    cutoff = data[1].published.date()  # type: ignore[union-attr]
    registry = {
        "m/sim": CutoffEntry(cutoff=cutoff, source="Simulation: a test"),
        "m/real": CutoffEntry(cutoff=cutoff, source="a model card"),
    }
    by_model = {r.model: r for r in analyse(data, registry).rows}
    assert by_model["m/sim"].simulated is True
    assert by_model["m/sim"].note.startswith("SIMULATION")
    assert by_model["m/real"].simulated is False
    assert "SIMULATION" not in by_model["m/real"].note
