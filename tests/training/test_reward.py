"""The verifiable reward: correctness, consistency, and the shapes TRL calls them with."""

from __future__ import annotations

import asyncio
import inspect
import re
from typing import cast

import pytest

from livemed.training.reward import (
    Verdict,
    async_correctness_reward_func,
    completion_text,
    consistency_reward_func,
    consistency_rewards,
    correctness_reward_func,
    reward_funcs,
    verdict_reward,
)

_ANSWER = re.compile(r"<answer>\s*\[\[(A|B|tie)\]\]\s*</answer>\s*\Z")


def parse(text: str) -> Verdict:
    """A strict toy parser: the verdict must close the output."""
    found = _ANSWER.search(text)
    return cast(Verdict, found.group(1)) if found else None


def out(verdict: str) -> str:
    return f"<think>compare</think><answer>[[{verdict}]]</answer>"


def test_reward_is_one_only_for_a_compliant_correct_verdict() -> None:
    assert verdict_reward(out("A"), "A", parse) == 1.0
    assert verdict_reward(out("B"), "A", parse) == 0.0
    assert verdict_reward(out("tie"), "A", parse) == 0.0
    assert verdict_reward("I prefer A.", "A", parse) == 0.0  # non-compliant: invalid, never coerced
    assert verdict_reward("", "B", parse) == 0.0


def test_completion_text_reads_both_trl_formats() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": out("B")}]) == out("B")
    with pytest.raises(TypeError):
        completion_text(3)


def test_correctness_reward_in_trl_shape_reads_gold_from_the_column() -> None:
    func = correctness_reward_func(parse)
    completions = [[{"role": "assistant", "content": out(v)}] for v in ("A", "B", "A", "x")]
    rewards = func(
        prompts=[[{"role": "user", "content": "p"}]] * 4,
        completions=completions,
        completion_ids=[[1]] * 4,
        gold_verdict=["A", "A", "B", "A"],
        pair_id=["p1"] * 4,
        trainer_state=None,
    )
    assert rewards == [1.0, 0.0, 0.0, 0.0]
    assert not inspect.iscoroutinefunction(func)


def test_async_reward_is_a_coroutine_function_with_the_same_values() -> None:
    func = async_correctness_reward_func(parse)
    assert inspect.iscoroutinefunction(func)
    rewards = asyncio.run(func(completions=[out("A"), out("B")], gold_verdict=["A", "A"], prompts=["p", "p"]))
    assert rewards == [1.0, 0.0]


def test_consistency_needs_both_orders_right_rollout_by_rollout() -> None:
    # pair p1, 2 rollouts per order: rollout 0 right in both orders, rollout 1 wrong in the swapped order
    texts = [out("A"), out("A"), out("B"), out("A")]
    gold = ["A", "A", "B", "B"]
    pairs = ["p1"] * 4
    orders = ["original", "original", "swapped", "swapped"]
    result = consistency_rewards(texts, gold, pairs, orders, parse)
    assert result.rewards == [1.0, 0.0, 1.0, 0.0]
    assert result.partners_missing == 0


def test_consistency_falls_back_to_correctness_without_the_partner_and_logs_it() -> None:
    logged: list[tuple[str, object]] = []
    func = consistency_reward_func(parse)
    rewards = func(
        completions=[out("A"), out("B"), out("B")],
        gold_verdict=["A", "B", "A"],
        pair_id=["p1", "p2", "p1"],
        order=["original", "swapped", "swapped"],
        log_metric=lambda name, value: logged.append((name, value)),
    )
    # p1 original right, its partner (p1 swapped, rollout 0) wrong → 0; p2 alone → its own correctness;
    # p1 swapped wrong → 0
    assert rewards == [0.0, 1.0, 0.0]
    assert logged == [("consistency/partners_missing", pytest.approx(1 / 3))]


def test_named_rewards() -> None:
    assert [f.__name__ for f in reward_funcs("correctness", parse)] == ["verdict_correct"]
    assert [f.__name__ for f in reward_funcs("consistency", parse)] == ["verdict_consistent"]
    with pytest.raises(ValueError, match="unknown reward"):
        reward_funcs("format", parse)  # type: ignore[arg-type]
