"""The benchmark items judge validation mutates: multiple choice, MedCalc rows and PICO span sets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PICO_KEYS = ("P", "I", "C", "O")


@dataclass(frozen=True)
class ChoiceItem:
    """A multiple-choice or yes/no/maybe item: `answer` is a key of `options`."""

    dataset: str
    item_id: str
    question: str
    options: dict[str, str]
    answer: str
    context: str = ""
    group: str = ""  # the item's natural group: MedQA's exam step, PubMedQA's gold decision


@dataclass(frozen=True)
class CalcItem:
    """One MedCalc-Bench row: the note, the question, the entities and the answer with its limits."""

    item_id: str
    calculator_id: int
    calculator: str
    output_type: str  # decimal | integer | date
    note: str
    question: str
    entities: dict[str, Any]
    answer: str
    lower: str
    upper: str
    dataset: str = "medcalc"


@dataclass(frozen=True)
class PicoItem:
    """An abstract and its gold span sets per PICO key (verbatim strings)."""

    item_id: str
    text: str
    spans: dict[str, list[str]] = field(default_factory=dict)
    dataset: str = "pico"


Item = ChoiceItem | CalcItem | PicoItem


def item_group(item: Item) -> str:
    """The item's stratum within its dataset: the MedCalc calculator id, a choice item's `group`
    (MedQA's exam step, PubMedQA's gold decision), '' for PICO."""
    if isinstance(item, CalcItem):
        return str(item.calculator_id)
    if isinstance(item, ChoiceItem):
        return item.group
    return ""
