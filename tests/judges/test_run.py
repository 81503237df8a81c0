"""Judge runs through the engine and run_stage: verdicts, invalid outputs, failed calls, resume."""

from __future__ import annotations

from livemed.judges.datasets.items import ChoiceItem, Item, PicoItem
from livemed.judges.meta import evaluate
from livemed.judges.pairs import build_pairs
from livemed.judges.run import JudgeRun, clear_retried, judge_pairs
from livemed.models import LLM, Engine
from livemed.models.base import FatalModelError
from livemed.models.fake import FakeModel
from livemed.records import JudgeVerdict, Rejection
from livemed.records.judging import JudgeMode
from livemed.store import Store
from tests.judges.helpers import oracle

ITEMS: list[Item] = [
    ChoiceItem("medqa", "1", "Which drug?", {"A": "aspirin", "B": "heparin", "C": "warfarin"}, "B"),
    PicoItem(
        item_id="t1",
        text="Adults with asthma received budesonide or placebo for 12 weeks; the outcome was lung function.",
        spans={"P": ["Adults with asthma"], "I": ["budesonide"], "C": ["placebo"], "O": ["lung function"]},
    ),
]


async def test_an_oracle_judge_is_correct_in_both_orders(any_store: Store) -> None:
    pairs = list(build_pairs(ITEMS, 0, "MIT"))
    model = oracle(pairs)
    run = JudgeRun(LLM(Engine(store=any_store), model, stage="judges"), temperature=1.0)
    result = await judge_pairs(any_store, pairs, run, samples=2)
    assert result.written == {"judge_verdict": len(pairs) * 2 * 2}
    verdicts = list(any_store.iter(JudgeVerdict))
    assert all(v.correct for v in verdicts)
    assert {v.order for v in verdicts} == {"original", "swapped"}
    assert {call[1].sample for call in model.calls} == {0, 1}
    assert {call[1].temperature for call in model.calls} == {1.0}
    assert all(v.provenance.prompt_hash for v in verdicts)
    tables = evaluate(verdicts)
    assert tables.average("majority") == 1.0
    assert tables.average("consistent") == 1.0
    assert tables.average("flip_rate") == 0.0
    again = await judge_pairs(any_store, pairs, run, samples=2)
    assert again.skipped == again.seen
    assert len(model.calls) == len(pairs) * 4  # resumed: nothing asked twice


async def test_non_compliant_output_is_an_invalid_verdict(sqlite_store: Store) -> None:
    pairs = list(build_pairs(ITEMS[:1], 0, "MIT"))
    model = FakeModel("fake/chatty", default="A is better, clearly.")
    run = JudgeRun(LLM(Engine(store=sqlite_store), model, stage="judges"))
    await judge_pairs(sqlite_store, pairs, run, samples=1)
    verdicts = list(sqlite_store.iter(JudgeVerdict))
    assert verdicts
    assert all(v.verdict is None and v.reason == "no reasoning in <think>…</think>" for v in verdicts)
    assert evaluate(verdicts).invalid_share() == 1.0


async def test_failed_calls_are_rejections_asked_again_next_run(sqlite_store: Store) -> None:
    pairs = list(build_pairs(ITEMS[:1], 0, "MIT"))
    dead = FakeModel("fake/oracle", function=lambda m, s: FatalModelError("400 bad request", status=400))
    run = JudgeRun(LLM(Engine(store=sqlite_store), dead, stage="judges"))
    result = await judge_pairs(sqlite_store, pairs, run, samples=1)
    assert result.call_failed == len(pairs) * 2
    assert not list(sqlite_store.iter(JudgeVerdict))
    assert all(r.call_failed for r in sqlite_store.iter(Rejection))
    working = JudgeRun(LLM(Engine(store=sqlite_store), oracle(pairs), stage="judges"))
    again = await judge_pairs(sqlite_store, pairs, working, samples=1)
    assert again.written == {"judge_verdict": len(pairs) * 2}
    assert clear_retried(sqlite_store) == len(pairs) * 2
    assert sqlite_store.count().get("rejection", 0) == 0


async def test_pointwise_verdicts_compare_scores(sqlite_store: Store) -> None:
    pairs = list(build_pairs(ITEMS, 3, "MIT"))
    run = JudgeRun(LLM(Engine(store=sqlite_store), oracle(pairs), stage="judges"), mode="pointwise")
    await judge_pairs(sqlite_store, pairs, run, samples=1)
    verdicts = list(sqlite_store.iter(JudgeVerdict))
    assert len(verdicts) == len(pairs)  # one order: scores do not depend on slots
    assert all(v.correct for v in verdicts)
    assert all(len(v.scores) == 2 and v.scores[0] != v.scores[1] for v in verdicts)
    tied = JudgeRun(
        LLM(Engine(store=sqlite_store), FakeModel("fake/flat", default="<think>x</think><score>5</score>")),
        mode="pointwise",
    )
    await judge_pairs(sqlite_store, pairs, tied, samples=1)
    flat = [v for v in sqlite_store.iter(JudgeVerdict) if v.judge == "fake/flat"]
    assert {v.verdict for v in flat} == {"tie"}
    assert evaluate(flat).average("majority") == 0.0


async def test_a_reply_without_text_is_an_invalid_sample_not_a_failed_call(sqlite_store: Store) -> None:
    """The engine calls a reply cut at max_tokens before any text a failure (`truncated`); a judge run
    counts it as what it is, a sample that came and does not comply, and never asks it again."""
    from livemed.models import Completion

    pairs = list(build_pairs(ITEMS[:1], 0, "MIT"))
    cut = Completion(text="", finish_reason="length", completion_tokens=64, model="fake/cut")
    model = FakeModel("fake/cut", default=cut)
    modes: tuple[JudgeMode, ...] = ("pairwise", "pointwise")
    for mode in modes:
        run = JudgeRun(LLM(Engine(store=sqlite_store), model), mode=mode, max_tokens=64)
        assert (await judge_pairs(sqlite_store, pairs, run, samples=1)).call_failed == 0
    verdicts = list(sqlite_store.iter(JudgeVerdict))
    assert len(verdicts) == len(pairs) * 3  # two orders pairwise, one pointwise
    assert {v.reason for v in verdicts} == {"empty reply (cut at max_tokens: finish_reason length)"}
    assert all(v.completion_tokens >= 64 for v in verdicts)
    calls = len(model.calls)
    for mode in modes:
        run = JudgeRun(LLM(Engine(store=sqlite_store), model), mode=mode, max_tokens=64)
        again = await judge_pairs(sqlite_store, pairs, run, samples=1)
        assert again.skipped == again.seen
    assert len(model.calls) == calls
