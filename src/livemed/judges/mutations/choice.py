"""Multiple choice and yes/no/maybe: the gold answer and each wrong option, written as a model would."""

from __future__ import annotations

from livemed.judges.datasets.items import ChoiceItem
from livemed.judges.metrics import exact_match
from livemed.records import Candidate

_STANCE = {
    "yes": "the findings support it",
    "no": "the findings do not support it",
    "maybe": "the evidence is mixed and does not settle it",
}


def answer_text(item: ChoiceItem, key: str) -> str:
    """A short rationale and the answer in the task's format (`Answer: X`)."""
    if item.dataset == "pubmedqa":
        return f"Reading the abstract against the question, {_STANCE[key]}.\nAnswer: {key}"
    return f"The presentation is best explained by option {key}, {item.options[key]}.\nAnswer: {key}"


def candidates(item: ChoiceItem, seed: int) -> list[Candidate]:
    """The gold option (operator `gold`) and every wrong one (`wrong_option:<key>`), ranked."""
    del seed  # deterministic without randomness: one candidate per option
    out = []
    for key in item.options:
        gold = key == item.answer
        out.append(
            Candidate(
                id="gold" if gold else f"option:{key}",
                text=answer_text(item, key),
                answer=key,
                operators=["gold"] if gold else [f"wrong_option:{key}"],
                metric=exact_match(key, item.answer),
                correct=gold,
                rank=0 if gold else 1,
            )
        )
    return out
