"""Judge runs: k samples per pair and slot order (pairwise) or per pair (pointwise), every call through
the engine, one `JudgeVerdict` per sample through `run_stage` (so runs resume, and the response cache
means a finished sample is never paid for twice). A failed call is a `Rejection` (`call_failed`), asked
again on the next run; non-compliant output is an invalid verdict, never coerced."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from livemed.judges.parse import Parsed, parse_pairwise, parse_pointwise
from livemed.judges.templates import PROMPT_HASHES, pairwise_messages, pointwise_messages
from livemed.models import LLM, CallFailure, Completion, Settings
from livemed.pipeline import StageResult, run_stage
from livemed.records import JudgeVerdict, Pair, Provenance, Record, Rejection
from livemed.records.judging import JudgeMode, Order, Slot, verdict_id
from livemed.store import Store

STAGE = "judges"


@dataclass(frozen=True)
class Job:
    """One sample to ask: a pair, a slot order, a sample index."""

    pair: Pair
    order: Order
    sample: int

    def verdict_id(self, judge: str, mode: str) -> str:
        return verdict_id(self.pair.id, judge, mode, self.order, self.sample)


def jobs(pairs: Iterable[Pair], samples: int, mode: JudgeMode) -> Iterator[Job]:
    orders: tuple[Order, ...] = ("original", "swapped") if mode == "pairwise" else ("original",)
    for pair in pairs:
        for order in orders:
            for sample in range(samples):
                yield Job(pair, order, sample)


@dataclass(frozen=True)
class JudgeRun:
    """How to ask: the judge bound to the engine, the mode and the sampling settings."""

    llm: LLM
    mode: JudgeMode = "pairwise"
    temperature: float = 1.0
    max_tokens: int | None = None

    def settings(self, sample: int) -> Settings:
        return Settings(temperature=self.temperature, max_tokens=self.max_tokens, sample=sample)

    def provenance(self) -> Provenance:
        settings = {"mode": self.mode, "temperature": self.temperature, "max_tokens": self.max_tokens}
        return Provenance(model_id=self.llm.id, prompt_hash=PROMPT_HASHES[self.mode], settings=settings)


def _failure(job: Job, run: JudgeRun, failure: CallFailure) -> Rejection:
    return Rejection(
        stage=STAGE,
        reason="call_failed",
        detail=failure.detail,
        record_kind=JudgeVerdict.kind,
        record_id=job.verdict_id(run.llm.id, run.mode),
    )


def _verdict(
    job: Job,
    run: JudgeRun,
    parsed: Parsed,
    raw: str,
    replies: list[Completion],
    verdict: Slot | Literal["tie"] | None,
    scores: list[float] | None = None,
) -> JudgeVerdict:
    _, _, gold = job.pair.slots(job.order)
    return JudgeVerdict(
        pair_id=job.pair.id,
        dataset=job.pair.dataset,
        family=job.pair.family,
        tertile=job.pair.tertile,
        judge=run.llm.id,
        mode=run.mode,
        order=job.order,
        sample=job.sample,
        gold=gold,
        verdict=verdict,
        scores=scores or [],
        reason=parsed.reason,
        raw=raw,
        prompt_tokens=sum(r.prompt_tokens for r in replies),
        completion_tokens=sum(r.completion_tokens for r in replies),
        provenance=run.provenance(),
    )


async def judge_job(job: Job, run: JudgeRun) -> list[Record]:
    """One sample: a `JudgeVerdict` (valid or invalid), or a call-failed `Rejection`."""
    if run.mode == "pointwise":
        return await _pointwise(job, run)
    reply = await run.llm.generate(pairwise_messages(job.pair, job.order), run.settings(job.sample))
    if isinstance(reply, CallFailure):
        return [_failure(job, run, reply)]
    parsed = parse_pairwise(reply.text, reply.reasoning)
    return [_verdict(job, run, parsed, reply.text, [reply], parsed.verdict)]


async def _pointwise(job: Job, run: JudgeRun) -> list[Record]:
    first, second, _ = job.pair.slots(job.order)
    replies: list[Completion] = []
    parsed: list[Parsed] = []
    for candidate in (first, second):
        reply = await run.llm.generate(pointwise_messages(job.pair, candidate), run.settings(job.sample))
        if isinstance(reply, CallFailure):
            return [_failure(job, run, reply)]
        replies.append(reply)
        parsed.append(parse_pointwise(reply.text, reply.reasoning))
    raw = "\n---\n".join(r.text for r in replies)
    bad = next((p for p in parsed if p.score is None), None)
    if bad is not None:
        return [_verdict(job, run, bad, raw, replies, verdict=None)]
    a, b = (p.score or 0.0 for p in parsed)
    verdict: Slot | Literal["tie"] = "tie" if a == b else "A" if a > b else "B"
    return [_verdict(job, run, Parsed(), raw, replies, verdict=verdict, scores=[a, b])]


async def judge_pairs(
    store: Store, pairs: Iterable[Pair], run: JudgeRun, *, samples: int, window: int = 64
) -> StageResult:
    """Ask every sample not yet stored (resumable); returns the stage's counts."""
    return await run_stage(
        store,
        jobs(pairs, samples, run.mode),
        lambda job: judge_job(job, run),
        output_id=lambda job: job.verdict_id(run.llm.id, run.mode),
        output_kinds=[JudgeVerdict.kind],
        batch_size=max(64, min(window, 512)),
        window=window,
    )


def clear_retried(store: Store) -> int:
    """Delete failed-call rejections whose sample has a verdict now (it was asked again)."""
    prefix = f"{STAGE}:verdict:"
    stale = [i for i in store.ids(Rejection.kind) if i.startswith(prefix)]
    done = store.has(JudgeVerdict.kind, [i.removeprefix(f"{STAGE}:") for i in stale])
    return store.delete(Rejection.kind, [f"{STAGE}:{i}" for i in sorted(done)])
