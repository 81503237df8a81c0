"""Numbers written in digits or words: the one table of number words, and the values a text states.

A ground-floor module (it imports nothing of livemed): the Controller's quote check and the fuzzy
grounding (`curate.grounding`) compare the numbers two texts state, and the decisive-value patterns
(`rubrics.decisive`) read "six months" as "6 month".
"""

from __future__ import annotations

import re
from collections import Counter

_WORDS_TEXT = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
)
_WORDS = _WORDS_TEXT.split()
WORD_NUMBERS = {word: str(value) for value, word in enumerate(_WORDS)} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "ninety": "90",
    "hundred": "100",
}
DIGIT_WORDS = tuple(_WORDS[1:10])  # "one" … "nine": the second part of "twenty-one"
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(WORD_NUMBERS)})\b", re.IGNORECASE)


def numbers(text: str) -> Counter[str]:
    """The values a text states, each in one spelling and counted: "500 mg for three days" →
    {"500": 1, "3": 1}; "4.0 g" and "four grams" both → {"4": 1}. Compare two with `<=`: "15 to 20 g,
    then again after 15 minutes" states 15 twice, which "151 to 20 g … after 15 minutes" does not."""
    found = [*_DIGITS.findall(text), *(WORD_NUMBERS[w.lower()] for w in _NUMBER_WORD.findall(text))]
    return Counter(_value(number) for number in found)


def _value(number: str) -> str:
    whole, _, fraction = number.partition(".")
    fraction = fraction.rstrip("0")
    return f"{whole.lstrip('0') or '0'}.{fraction}" if fraction else whole.lstrip("0") or "0"
