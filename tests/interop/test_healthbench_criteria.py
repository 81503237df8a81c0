"""The importer validates an example's criteria in one call: every one it makes must be exactly
what the model's own validation, and a read back from the store, make of the same fields."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from livemed.interop.healthbench import parse_example
from livemed.records import Criterion, Rubric

PUBLISHED = datetime(2025, 3, 1, tzinfo=UTC)

POINTS = [1, 5, 10, 12, 250, -1, -3, -11, 0.4, -0.4, 0.5, -0.5, 2.5, 7.75, -9.99, 1e5]
TAGS = [
    ["axis:accuracy", "level:example"],
    ["axis:communication_quality"],
    ["axis:instruction_following", "level:cluster"],
    ["axis:something_new"],
    [],
]
THEMES = [["theme:emergency_referrals"], ["theme:Global_Health"], ["theme:hedging", "theme:x"], []]


def _example(n: int) -> dict[str, Any]:
    items = [
        {
            "criterion": f"  Item {k} of example {n}  ",
            "points": POINTS[(n + k) % len(POINTS)],
            "tags": TAGS[k],
        }
        for k in range(len(TAGS))
    ]
    return {
        "prompt_id": f"p{n}",
        "prompt": [{"role": "user", "content": f"question {n}"}],
        "rubrics": items,
        "example_tags": THEMES[n % len(THEMES)],
    }


@pytest.mark.parametrize("n", range(len(POINTS)))
def test_every_imported_criterion_is_what_validation_makes_of_it(n: int) -> None:
    _, rubric = parse_example(_example(n), published=PUBLISHED, date_field="given")
    assert rubric.criteria
    for criterion in rubric.criteria:
        fields = criterion.model_dump()
        assert Criterion.model_validate(fields) == criterion
        assert Criterion.model_validate_json(criterion.model_dump_json()).model_dump() == fields
    stored = Rubric.model_validate_json(rubric.model_dump_json())  # how the store reads it back
    assert stored == rubric


def test_the_theme_is_spelled_as_the_criterion_model_spells_it() -> None:
    _, rubric = parse_example(_example(1), published=PUBLISHED, date_field="given")
    assert {c.theme for c in rubric.criteria} == {"global health"}
    _, untagged = parse_example(_example(3), published=PUBLISHED, date_field="given")
    assert {c.theme for c in untagged.criteria} == {None}
