"""The rendered prompts for two demo cases match `snapshots/*.txt` (regenerate: see `render.py`)."""

from __future__ import annotations

import pytest

from tests.prompts.render import SNAPSHOTS, demo_cases, render_all

RENDERED = render_all()


def test_every_snapshot_is_rendered_and_every_render_has_a_snapshot() -> None:
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.txt")) == sorted(RENDERED)
    assert {c.query_derived for c in demo_cases()} == {False, True}  # a thread and a case report


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_the_rendered_prompt_matches_its_snapshot(name: str) -> None:
    expected = (SNAPSHOTS / f"{name}.txt").read_text(encoding="utf-8")
    assert RENDERED[name] == expected, (
        f"the {name} prompt changed: if on purpose, run `.venv/bin/python -m tests.prompts.render`"
    )
