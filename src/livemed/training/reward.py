"""The verifiable reward for judge training: pure functions of a parsed verdict, and TRL adapters.

- `verdict_reward(text, gold, parse)`: 1.0 when `parse(text)` is a compliant verdict equal to the gold
  slot, else 0.0 (invalid output, a tie or the wrong slot). J1's best reward: correctness only, no
  format bonus, no negative reward.
- `consistency_rewards(...)`: the optional verdict-consistency reward (J1): a completion earns 1.0 only
  when it is correct *and* the completion with the same rollout index for the other slot order of the
  same pair is correct too. Both orders must be in the same reward call (the exports put them side by
  side and `train` keeps TRL's sampler from shuffling them apart); a completion whose partner is not in
  the call falls back to plain correctness, and `partners_missing` counts those.
- `correctness_reward_func` / `consistency_reward_func` / `async_correctness_reward_func`: callables in
  the shape TRL's `GRPOTrainer(reward_funcs=...)` calls — keyword arguments `prompts`, `completions`
  and one list per dataset column (`gold_verdict`, `pair_id`, `order`, ...), returning one float per
  completion. Completions may be strings (standard format) or lists of messages (conversational).

Nothing here imports torch or TRL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["A", "B", "tie"] | None
Parse = Callable[[str], Verdict]
RewardFunc = Callable[..., list[float]]
AsyncRewardFunc = Callable[..., Awaitable[list[float]]]
RewardName = Literal["correctness", "consistency"]
REWARDS: tuple[RewardName, ...] = ("correctness", "consistency")


def verdict_reward(text: str, gold: str, parse: Parse) -> float:
    """1.0 for a compliant output whose verdict is the gold slot; 0.0 otherwise (invalid, tie, wrong)."""
    verdict = parse(text)
    return 1.0 if verdict is not None and verdict != "tie" and verdict == gold else 0.0


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string, or the content of a list of chat messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    raise TypeError(f"a completion is a string or a list of messages, not {type(completion).__name__}")


@dataclass
class ConsistencyResult:
    rewards: list[float]
    partners_missing: int


def consistency_rewards(
    texts: Sequence[str],
    gold: Sequence[str],
    pair_ids: Sequence[str],
    orders: Sequence[str],
    parse: Parse,
) -> ConsistencyResult:
    """Verdict-consistency rewards for one reward call (see the module docstring for the rule).

    Rollout `k` of a (pair, order) is the k-th completion of that prompt in the call; it is matched
    with rollout `k` of the same pair's other order.
    """
    correct = [verdict_reward(t, g, parse) for t, g in zip(texts, gold, strict=True)]
    rollout: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    for pair, order in zip(pair_ids, orders, strict=True):
        k = seen.get((pair, order), 0)
        seen[(pair, order)] = k + 1
        rollout.append(k)
    by_rollout: dict[tuple[str, int], list[int]] = {}
    for i, (pair, k) in enumerate(zip(pair_ids, rollout, strict=True)):
        by_rollout.setdefault((pair, k), []).append(i)
    rewards: list[float] = []
    missing = 0
    for i, (pair, order, k) in enumerate(zip(pair_ids, orders, rollout, strict=True)):
        partners = [j for j in by_rollout[(pair, k)] if orders[j] != order]
        if not partners:
            missing += 1
            rewards.append(correct[i])
        else:
            rewards.append(correct[i] * correct[partners[0]])
    return ConsistencyResult(rewards, missing)


def correctness_reward_func(parse: Parse) -> RewardFunc:
    """A TRL reward function: `verdict_reward` per completion, the gold slot from `gold_verdict`."""

    def verdict_correct(completions: list[Any], gold_verdict: list[str], **_: Any) -> list[float]:
        return [
            verdict_reward(completion_text(c), g, parse)
            for c, g in zip(completions, gold_verdict, strict=True)
        ]

    return verdict_correct


def async_correctness_reward_func(parse: Parse) -> AsyncRewardFunc:
    """The same reward as an `async def` (TRL runs async reward functions on its own event loop)."""
    plain = correctness_reward_func(parse)

    async def verdict_correct(completions: list[Any], gold_verdict: list[str], **kwargs: Any) -> list[float]:
        return plain(completions, gold_verdict, **kwargs)

    return verdict_correct


def consistency_reward_func(parse: Parse) -> RewardFunc:
    """A TRL reward function for verdict consistency; needs the `pair_id` and `order` columns.

    When TRL passes `log_metric`, the share of completions whose partner was missing is logged as
    `consistency/partners_missing`.
    """

    def verdict_consistent(
        completions: list[Any],
        gold_verdict: list[str],
        pair_id: list[str],
        order: list[str],
        **kwargs: Any,
    ) -> list[float]:
        texts = [completion_text(c) for c in completions]
        result = consistency_rewards(texts, gold_verdict, pair_id, order, parse)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and texts:
            log_metric("consistency/partners_missing", result.partners_missing / len(texts))
        return result.rewards

    return verdict_consistent


def reward_funcs(name: RewardName, parse: Parse) -> list[RewardFunc]:
    """The reward functions `train` hands to GRPOTrainer for a named reward."""
    if name == "correctness":
        return [correctness_reward_func(parse)]
    if name == "consistency":
        return [consistency_reward_func(parse)]
    raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(REWARDS)}")
