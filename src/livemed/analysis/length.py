"""Answer length and score, per model: the length bias the method says rubrics remove, measured.

Each scored answer's length is its number of words (whitespace-separated, from the stored text; the
completion tokens the endpoint reported are kept on the `Answer` too, but baselines have none). Per
model: the answers paired with a score, their median length, and Spearman's rank correlation between
length and score with its two-sided p-value (`closed_form.spearman`; None when not computable: fewer than
three answers, or all of one length or one score). A correlation near 0 is what a length-neutral
rubric gives; a strong positive one means longer answers score higher whatever they say.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, TypeAdapter
from typing_extensions import TypedDict

from livemed.analysis.inputs import Scored
from livemed.common.closed_form import spearman
from livemed.common.stats import finite_or_none
from livemed.records import Answer
from livemed.store import Store


class LengthRow(BaseModel):
    model: str
    n: int
    median_words: float
    rho: float | None
    p_value: float | None


def words(text: str) -> int:
    return len(text.split())


def length_bias(answers: Iterable[Answer], scores: Iterable[Scored]) -> list[LengthRow]:
    """One row per model with scored answers (sorted by model): length vs score."""
    return length_rows({a.id: words(a.text) for a in answers}, scores)


class _Text(TypedDict):
    text: str


_TEXT = TypeAdapter(_Text)


def stored_lengths(store: Store, answer_ids: Iterable[str]) -> dict[str, int]:
    """answer id -> its number of words, for the stored answers among `answer_ids` (only their text
    is read, 500 ids a query)."""
    return {
        answer_id: words(view["text"])
        for answer_id, view in store.fields_many("answer", sorted(set(answer_ids)), _TEXT)
    }


def length_rows(length: Mapping[str, int], scores: Iterable[Scored]) -> list[LengthRow]:
    """`length_bias` from each answer's number of words (answer id -> words)."""
    pairs: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for score in scores:
        if score.answer_id in length:
            pairs[score.model].append((length[score.answer_id], score.score))
    rows = []
    for model, found in sorted(pairs.items()):
        rho, p = spearman([float(n) for n, _ in found], [s for _, s in found])
        rows.append(
            LengthRow(
                model=model,
                n=len(found),
                median_words=float(statistics.median(n for n, _ in found)),
                rho=finite_or_none(rho),
                p_value=finite_or_none(p),
            )
        )
    return rows
