from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from livemed.errors import UnknownNameError
from livemed.records import RECORD_TYPES, AdviceCheck, Criterion, Doc, Usage, record_type
from tests.foundation.factories import PUBLISHED, doc, every_record


def test_every_record_kind_has_an_example() -> None:
    assert {r.kind for r in every_record()} == set(RECORD_TYPES)


@pytest.mark.parametrize("record", every_record(), ids=lambda r: r.kind)
def test_json_round_trip_is_lossless(record) -> None:  # type: ignore[no-untyped-def]
    again = type(record).model_validate_json(record.model_dump_json())
    assert again == record
    assert again.id == record.id


def test_ids_are_stable_and_derived_from_keys() -> None:
    assert doc("42").id == "demo:42"
    assert doc("42").id == doc("42", title="another title").id
    case = every_record()[2]
    assert case.id == "case:demo:1"
    assert case.parent_id == "demo:1"


def test_provenance_records_version_and_time() -> None:
    record = doc()
    assert record.provenance.livemed_version
    assert record.provenance.created_at.tzinfo is not None
    assert record.schema_version == 1


def test_naive_publication_date_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        doc(published=datetime(2025, 1, 1))
    assert "published" in str(info.value)


@pytest.mark.parametrize(
    ("weight", "polarity", "message"),
    [
        (5, "negative", "does not match polarity"),
        (-5, "positive", "does not match polarity"),
        (0, "positive", "must not be 0"),
        (11, "positive", "less than or equal to 10"),
        (-11, "negative", "greater than or equal to -10"),
    ],
)
def test_criterion_weight_must_match_polarity_and_range(weight: int, polarity: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        Criterion(text="x", polarity=polarity, axis="safety", weight=weight)
    assert message in str(info.value)
    assert "weight" in str(info.value) or str(weight) in str(info.value)


def test_a_malformed_axis_is_refused_with_the_value() -> None:
    """Axes are the domain pack's names (the rubric checks hold them to the pack): a record takes any
    lower-case name, and refuses anything else."""
    assert Criterion(text="x", polarity="positive", axis="jurisdiction_awareness", weight=3).axis
    with pytest.raises(ValidationError) as info:
        Criterion(text="x", polarity="positive", axis="Empathy!", weight=3)
    assert "axis" in str(info.value)
    assert "Empathy!" in str(info.value)


def test_advice_alignment_has_three_levels() -> None:
    assert AdviceCheck(advice_index=0, score=0.5).score == 0.5
    with pytest.raises(ValidationError, match=r"0\.0, 0\.5 or 1\.0"):
        AdviceCheck(advice_index=0, score=0.7)


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError, match="colour"):
        Doc.model_validate({**doc().model_dump(), "colour": "red"})


def test_blank_advice_is_refused() -> None:
    case = every_record()[2]
    with pytest.raises(ValidationError, match="blank"):
        type(case).model_validate({**case.model_dump(), "advice": ["ok", "  "]})


def test_record_type_lookup_suggests_close_names() -> None:
    assert record_type("case").kind == "case"
    with pytest.raises(UnknownNameError, match="did you mean 'grade'"):
        record_type("grad")


def test_usage_adds_field_by_field() -> None:
    total = Usage(calls=1, prompt_tokens=10, cost_usd=0.5).add(Usage(calls=2, cache_hits=1, cost_usd=0.25))
    assert (total.calls, total.cache_hits, total.prompt_tokens, total.cost_usd) == (3, 1, 10, 0.75)


def test_publication_date_is_exposed_for_indexing() -> None:
    assert doc().published_at == PUBLISHED


def test_scores_under_every_failure_policy_are_kept_side_by_side(sqlite_store) -> None:  # type: ignore[no-untyped-def]
    from livemed.records import Score

    common = {
        "answer_id": "answer:a",
        "case_id": "case:a",
        "model": "m",
        "judge": "j",
        "coverage": 1.0,
        "harm": 0.0,
    }
    default = Score(**common, score=0.5)
    excluded = Score(**common, score=0.8, failure_policy="exclude")
    counted = Score(**common, score=0.6, failure_policy="not-met")
    assert default.id == "score:answer:a:j:livemed"  # the default (strict) keeps the id stores hold
    assert counted.id == "score:answer:a:j:livemed:not-met"
    sqlite_store.put([default, excluded, counted])
    kept = {s.failure_policy: s.score for s in sqlite_store.iter(Score)}
    assert kept == {"strict": 0.5, "not-met": 0.6, "exclude": 0.8}


def test_an_overlong_source_id_is_refused_naming_the_field() -> None:
    from pydantic import ValidationError

    from tests.foundation.factories import doc

    with pytest.raises(ValidationError, match="source_id"):
        doc("x" * 513)


def test_a_doc_accepts_published_at_as_the_name_of_its_date() -> None:
    from livemed.records import Doc

    data = {"source": "s", "source_id": "1", "published_at": "2025-07-01T00:00:00+00:00", "text": "t"}
    parsed = Doc.model_validate(data)
    assert parsed.published.isoformat() == "2025-07-01T00:00:00+00:00"
    dumped = parsed.model_dump()
    assert "published" in dumped
    assert "published_at" not in dumped
