"""Strict parsing of judge outputs: compliant verdicts and scores, and every non-compliant shape."""

from __future__ import annotations

import pytest

from livemed.judges.parse import parse_pairwise, parse_pointwise


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("<think>B misses the comparator.</think><answer>[[A]]</answer>", "A"),
        ("  <think>x</think>\n<answer> [[B]] </answer>\n", "B"),
    ],
)
def test_compliant_pairwise(text: str, verdict: str) -> None:
    parsed = parse_pairwise(text)
    assert parsed.verdict == verdict
    assert parsed.valid
    assert parsed.reason == ""


def test_reasoning_moved_out_by_the_client_counts() -> None:
    assert parse_pairwise("<answer>[[A]]</answer>", reasoning="A is right").verdict == "A"
    assert parse_pairwise("<answer>[[A]]</answer>").reason == "no reasoning in <think>…</think>"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<think>x</think>A", "no <answer>…</answer>"),
        ("<think>x</think><answer>[[A]]</answer> because", "text after </answer>"),
        ("<think>x</think>so <answer>[[A]]</answer>", "text before <answer>"),
        ("<think>x</think><answer>[[C]]</answer>", "<answer> does not hold exactly [[A]] or [[B]]"),
        ("<think>x</think><answer>[[A]] or [[B]]</answer>", "<answer> does not hold exactly [[A]] or [[B]]"),
        ("<think>x</think><answer>A</answer>", "<answer> does not hold exactly [[A]] or [[B]]"),
        ("<think>x</think><answer>[[A]]</answer><answer>[[B]]</answer>", "more than one <answer>"),
        ("<think></think><answer>[[A]]</answer>", "no reasoning in <think>…</think>"),
        ("<think>x</think><think>y</think><answer>[[A]]</answer>", "more than one <think> block"),
        ("[[A]]", "no reasoning in <think>…</think>"),
        ("<think>A is right, but then again", "unclosed <think> (no </think>)"),
        ("<think>A is right<answer>[[A]]</answer>", "unclosed <think> (no </think>)"),
        ("Sure. <think>x</think><answer>[[A]]</answer>", "text before <think>"),
        ("  \n", "empty reply"),
    ],
)
def test_non_compliant_pairwise_is_invalid_never_coerced(text: str, reason: str) -> None:
    parsed = parse_pairwise(text)
    assert parsed.verdict is None
    assert not parsed.valid
    assert parsed.reason == reason


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("<think>ok</think><score>7</score>", 7.0),
        ("<think>ok</think><score> 10 </score>", 10.0),
        ("<think>a</think><score>0.5</score>", 0.5),
    ],
)
def test_compliant_pointwise(text: str, score: float) -> None:
    assert parse_pointwise(text).score == score


@pytest.mark.parametrize(
    "text",
    [
        "<think>a</think><score>11</score>",
        "<think>a</think><score>7.25</score>",
        "<think>a</think><score>-1</score>",
        "<think>a</think><score>7/10</score>",
        "<think>a</think>7",
        "<think>a</think><score>7</score> done",
    ],
)
def test_non_compliant_pointwise(text: str) -> None:
    parsed = parse_pointwise(text)
    assert parsed.score is None
    assert parsed.reason


def test_only_reasoning_sent_apart_is_invalid() -> None:
    assert parse_pairwise("", reasoning="A is right").reason == "no <answer>…</answer>"
    assert parse_pointwise("", reasoning="7 at most").reason == "no <score>…</score>"


@pytest.mark.parametrize("mode", ["pairwise", "pointwise"])
def test_the_prompt_states_the_rules_and_its_example_parses(mode: str) -> None:
    from livemed.judges.templates import PAIRWISE_FORMAT, POINTWISE_FORMAT

    prompt = PAIRWISE_FORMAT if mode == "pairwise" else POINTWISE_FORMAT
    parse = parse_pairwise if mode == "pairwise" else parse_pointwise
    example = next(line for line in prompt.splitlines() if line.endswith(("</answer>", "</score>")))
    assert parse(example[example.index("<think>") :]).valid
    rules = " ".join(prompt.split())
    assert "with the reasoning left open (no </think>), with text outside the tags" in rules
    assert "counts as invalid" in rules
