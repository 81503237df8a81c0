"""Deterministic, seeded, named mutation operators: each item's candidate responses.

`candidates(item, seed)` dispatches on the item type; the same item and seed give the same
candidates, each recording the operators that made it."""

from __future__ import annotations

from livemed.judges.datasets.items import CalcItem, ChoiceItem, Item, PicoItem
from livemed.judges.mutations import choice, medcalc, pico
from livemed.records import Candidate


def candidates(item: Item, seed: int) -> list[Candidate]:
    if isinstance(item, CalcItem):
        return medcalc.candidates(item, seed)
    if isinstance(item, PicoItem):
        return pico.candidates(item, seed)
    assert isinstance(item, ChoiceItem)
    return choice.candidates(item, seed)


__all__ = ["candidates"]
