"""`livemed update` runs the domain pack livemed.toml sets: in a legal project its rubric stage writes
the legal pack's rubrics offline (the legal axes), the same ones `livemed rubrics` writes there, and its
answers are graded against them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from livemed.domains import load_pack
from livemed.records import Answer, Case, Rubric, Run, Score
from livemed.rubrics.rules import RuleWriter
from livemed.rubrics.write import write_rubric
from livemed.store import Store
from tests.domains.helpers import legal_case
from tests.live.helpers import cli

LEGAL_AXES = {"accuracy", "completeness", "communication", "jurisdiction_awareness", "harm"}


def legal_project(folder: Path, update: str) -> Path:
    """A legal project with three legal cases already stored, no source to harvest and no evidence
    corpus (the legal pack bundles none)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "livemed.toml"
    text = f'domain = "legal"\nstore = "livemed.db"\n[curate]\nretriever = "none"\n[update]\n{update}\n'
    config.write_text(text, "utf-8")
    with Store(folder / "livemed.db") as store:
        store.put([legal_case(i) for i in range(3)])
    return config


def stored(config: Path) -> tuple[dict[str, Rubric], list[Answer], list[Score], list[Run]]:
    with Store(config.parent / "livemed.db") as store:
        rubrics = {r.case_id: r for r in store.iter(Rubric)}
        return rubrics, list(store.iter(Answer)), list(store.iter(Score)), list(store.iter(Run))


def test_update_in_a_legal_project_writes_the_legal_packs_rubrics_offline(tmp_path: Path) -> None:
    update = 'writer = "offline/rules"\nmodels = ["offline/reference"]\njudge = "offline/lexical"'
    config = legal_project(tmp_path / "update", update)
    result = cli(config, "update")
    assert result.exit_code == 0, result.output
    rubrics, answers, scores, runs = stored(config)
    cases = [legal_case(i) for i in range(3)]
    assert set(rubrics) == {case.id for case in cases}
    legal = load_pack("legal")
    for case in cases:
        [expected] = asyncio.run(write_rubric(case, RuleWriter(legal), legal))
        assert isinstance(expected, Rubric)
        assert rubrics[case.id].criteria == expected.criteria  # the legal pack's, not the medical default
        assert {c.axis for c in rubrics[case.id].criteria} <= LEGAL_AXES
    assert len(answers) == len(scores) == len(cases)
    [rubric_run] = [r for r in runs if r.command == "rubrics"]
    assert rubric_run.counts["rubric"] == len(cases)

    # `livemed rubrics` in the same project writes the same rubrics
    alone = legal_project(tmp_path / "alone", "")
    assert cli(alone, "rubrics", "--writer", "offline/rules").exit_code == 0
    by_command, _, _, _ = stored(alone)
    assert {k: r.criteria for k, r in by_command.items()} == {k: r.criteria for k, r in rubrics.items()}


def test_legal_cases_are_not_those_of_the_medical_pack() -> None:
    """The check above means something: the medical writer gives these cases other criteria."""
    case: Case = legal_case(0)
    legal = load_pack("legal")
    [by_legal] = asyncio.run(write_rubric(case, RuleWriter(legal), legal))
    [by_medical] = asyncio.run(write_rubric(case, RuleWriter()))
    assert getattr(by_legal, "criteria", None) != getattr(by_medical, "criteria", None)
