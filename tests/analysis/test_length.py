"""Answer length against score, per model (`analysis.length`), and where it is reported."""

from __future__ import annotations

import math

from livemed.analysis.length import length_bias
from livemed.common.closed_form import spearman
from livemed.records import Answer, Score


def _pair(model: str, n: int, words: int, score: float) -> tuple[Answer, Score]:
    answer = Answer(case_id=f"c{n}", model=model, sample=0, text=" ".join(["word"] * words))
    return answer, Score(
        answer_id=answer.id, case_id=f"c{n}", model=model, judge="j", score=score, coverage=score, harm=0
    )


def test_longer_answers_scoring_higher_give_a_positive_correlation_per_model() -> None:
    pairs = [_pair("m/long", n, 10 * (n + 1), n / 4) for n in range(5)]
    pairs += [_pair("m/flat", n, 10 * (n + 1), [0.5, 0.1, 0.9, 0.3, 0.7][n]) for n in range(5)]
    pairs.append(_pair("m/one", 0, 5, 1.0))
    flat, long, one = length_bias([a for a, _ in pairs], [s for _, s in pairs])
    assert (long.model, long.n, long.median_words) == ("m/long", 5, 30.0)
    assert long.rho is not None
    assert math.isclose(long.rho, 1.0)
    assert long.p_value is not None
    assert long.p_value < 0.05
    assert flat.rho is not None
    assert abs(flat.rho) < 0.5
    assert (one.n, one.rho, one.p_value) == (1, None, None)  # not computable, never a made-up number


def test_spearman_is_nan_for_tiny_or_constant_samples() -> None:
    assert all(math.isnan(v) for v in spearman([1, 2], [1, 2]))
    assert all(math.isnan(v) for v in spearman([1, 2, 3], [0.5, 0.5, 0.5]))
    assert math.isclose(spearman([1, 2, 3], [3, 2, 1])[0], -1.0)
