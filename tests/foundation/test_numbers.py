"""One table of number words (`livemed.common.numbers`), read the same by every stage that compares values."""

from __future__ import annotations

from livemed.common import numbers
from livemed.curate import grounding
from livemed.rubrics import decisive


def test_numbers_are_values_in_one_spelling() -> None:
    assert numbers.numbers("500 mg for three days") == {"500": 1, "3": 1}
    assert numbers.numbers("4.0 g a day") == numbers.numbers("four grams a day") == {"4": 1}
    assert numbers.numbers("0.50 mg") == {"0.5": 1}
    assert numbers.numbers("Take 50 mg") != numbers.numbers("Take 500 mg")
    # counted: a wrong number is not hidden by the same number elsewhere in the text
    element = numbers.numbers("take 15 to 20 grams, then check again after 15 minutes")
    assert element <= numbers.numbers("Take 15 to 20 grams; check again after 15 minutes.")
    assert not element <= numbers.numbers("take 151 to 20 grams, then check again after 15 minutes")


def test_the_grounding_and_the_decisive_values_share_the_table() -> None:
    assert decisive.WORD_NUMBERS is numbers.WORD_NUMBERS  # type: ignore[attr-defined]
    assert grounding.numbers is numbers.numbers  # type: ignore[attr-defined]
    assert decisive.value_key("six months") == "6 month"
