"""Judge runs: k samples per pair and slot order (pairwise) or per pair (pointwise), every call through
the engine, one `JudgeVerdict` per sample through `run_stage` (so runs resume, and the response cache
means a finished sample is never paid for twice).

Only a transport failure (an HTTP error, a timeout, a connection error) is a failed call: a `Rejection`
(`call_failed`), asked again on the next run. A reply that came is a sample, whatever it holds: one that
does not parse (an unclosed `<think>`, only reasoning, no `<answer>`, text outside the tags, an empty
reply) is an invalid verdict with its reason and the reply as it came, never coerced and never asked
again. A verdict's id holds its configuration (`JudgeRun.key`: endpoint, prompt hash, temperature,
max_tokens, parse policy) besides judge, mode, pair, order and sample index: another configuration
makes new verdicts, and the old ones stay."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from livemed.judges.parse import PARSE_POLICY, Parsed, parse_pairwise, parse_pointwise
from livemed.judges.templates import PROMPT_HASHES, pairwise_messages, pointwise_messages
from livemed.models import LLM, CallFailure, Completion, Settings
from livemed.models.replies import as_sent
from livemed.pipeline.runner import StageResult, run_stage
from livemed.records import JudgeVerdict, Pair, Provenance, Record, Rejection
from livemed.records.judging import JudgeMode, Order, Slot, config_key, verdict_id
from livemed.store import Store

STAGE = "judges"


@dataclass(frozen=True)
class Job:
    """One sample to ask: a pair, a slot order, a sample index."""

    pair: Pair
    order: Order
    sample: int


def jobs(pairs: Iterable[Pair], samples: int, mode: JudgeMode) -> Iterator[Job]:
    orders: tuple[Order, ...] = ("original", "swapped") if mode == "pairwise" else ("original",)
    for pair in pairs:
        for order in orders:
            for sample in range(samples):
                yield Job(pair, order, sample)


CERTIFY = "certify"  # the purpose of the certification battery's runs


def is_certification(verdict: JudgeVerdict) -> bool:
    """A verdict of `judges certify`'s battery (its own configuration; kept out of `judges report`)."""
    return verdict.provenance.settings.get("purpose") == CERTIFY


@dataclass(frozen=True)
class JudgeRun:
    """How to ask: the judge bound to the engine, the mode and the sampling settings."""

    llm: LLM
    mode: JudgeMode = "pairwise"
    temperature: float = 1.0
    max_tokens: int | None = None
    purpose: str = ""  # "certify": the certification battery's own verdicts, apart from `judges run`'s

    def settings(self, sample: int) -> Settings:
        return Settings(temperature=self.temperature, max_tokens=self.max_tokens, sample=sample)

    def config(self) -> dict[str, Any]:
        """Everything besides judge, mode and sample index that changes a verdict (and the purpose, so
        that certification's verdicts are records of their own)."""
        config: dict[str, Any] = {
            "endpoint": self.llm.model.endpoint,
            "prompt_hash": PROMPT_HASHES[self.mode],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "parse": PARSE_POLICY,
        }
        if self.purpose:
            config["purpose"] = self.purpose
        return config

    @cached_property
    def key(self) -> str:
        """The configuration's short hash, part of every verdict id of this run."""
        return config_key(self.config())

    def verdict_id(self, job: Job) -> str:
        return verdict_id(job.pair.id, self.llm.id, self.mode, job.order, job.sample, self.key)

    def provenance(self) -> Provenance:
        settings = {"mode": self.mode, **self.config()}
        return Provenance(model_id=self.llm.id, prompt_hash=PROMPT_HASHES[self.mode], settings=settings)


def _failure(job: Job, run: JudgeRun, failure: CallFailure) -> Rejection:
    return Rejection(
        stage=STAGE,
        reason="call_failed",
        detail=failure.detail,
        record_kind=JudgeVerdict.kind,
        record_id=run.verdict_id(job),
    )


def answered(reply: Completion | CallFailure) -> Completion | None:
    """The reply that came, or None after a transport failure. A reply without usable text (only an
    unclosed `<think>`, only reasoning, empty, cut at max_tokens) came: it is a sample (invalid)."""
    return reply if isinstance(reply, Completion) else reply.reply


def _parsed(reply: Completion, parse: Callable[[str, str], Parsed]) -> tuple[Parsed, str, str]:
    """(what the parser made of the reply as it came, its content, its separate reasoning)."""
    content, reasoning = as_sent(reply)
    parsed = parse(content, reasoning)
    if not parsed.valid and reply.finish_reason == "length":
        parsed = Parsed(reason=f"{parsed.reason} (cut at max_tokens: finish_reason length)")
    return parsed, content, reasoning


def _verdict(
    job: Job,
    run: JudgeRun,
    parsed: Parsed,
    raw: tuple[str, str],
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
        raw=raw[0],
        reasoning=raw[1],
        config=run.key,
        prompt_tokens=sum(r.prompt_tokens for r in replies),
        completion_tokens=sum(r.completion_tokens for r in replies),
        provenance=run.provenance(),
    )


async def judge_job(job: Job, run: JudgeRun) -> list[Record]:
    """One sample: a `JudgeVerdict` (valid or invalid), or a call-failed `Rejection`."""
    if run.mode == "pointwise":
        return await _pointwise(job, run)
    sent = await run.llm.generate(pairwise_messages(job.pair, job.order), run.settings(job.sample))
    reply = answered(sent)
    if reply is None:
        assert isinstance(sent, CallFailure)
        return [_failure(job, run, sent)]
    parsed, content, reasoning = _parsed(reply, parse_pairwise)
    return [_verdict(job, run, parsed, (content, reasoning), [reply], parsed.verdict)]


async def _pointwise(job: Job, run: JudgeRun) -> list[Record]:
    first, second, _ = job.pair.slots(job.order)
    replies: list[Completion] = []
    parsed: list[tuple[Parsed, str, str]] = []
    for candidate in (first, second):
        sent = await run.llm.generate(pointwise_messages(job.pair, candidate), run.settings(job.sample))
        reply = answered(sent)
        if reply is None:
            assert isinstance(sent, CallFailure)
            return [_failure(job, run, sent)]
        replies.append(reply)
        parsed.append(_parsed(reply, parse_pointwise))
    raw = ("\n---\n".join(p[1] for p in parsed), "\n---\n".join(p[2] for p in parsed if p[2]))
    bad = next((p for p, _, _ in parsed if p.score is None), None)
    if bad is not None:
        return [_verdict(job, run, bad, raw, replies, verdict=None)]
    a, b = (p.score or 0.0 for p, _, _ in parsed)
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
        output_id=run.verdict_id,
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


RunKey = tuple[str, str, str]  # (judge, mode, configuration hash) of stored verdicts


def run_key(verdict: JudgeVerdict) -> RunKey:
    return verdict.judge, verdict.mode, verdict.config


def run_labels(firsts: dict[RunKey, JudgeVerdict]) -> dict[RunKey, str]:
    """A name for each stored configuration (given one verdict of each): `judge · mode`, and where one
    judge and mode ran in several configurations, what tells them apart (`judge · mode · temperature
    0.0`), so two configurations are never merged nor named alike."""
    runs: dict[tuple[str, str], list[RunKey]] = {}
    for key in firsts:
        runs.setdefault(key[:2], []).append(key)
    names: dict[RunKey, str] = {}
    for (judge, mode), keys in runs.items():
        base = f"{judge} · {mode}"
        if len(keys) == 1:
            names[keys[0]] = base
            continue
        described = {key: _described(firsts[key]) for key in keys}
        fields = _differing(list(described.values()))
        for key in keys:
            parts = ", ".join(f"{f} {described[key].get(f, '–')}" for f in fields)
            names[key] = f"{base} · {parts or 'config ' + (key[2] or '–')}"
    return names


def _described(verdict: JudgeVerdict) -> dict[str, str]:
    """The settings a verdict was made with, as text (a verdict stored before configurations had ids
    names fewer of them)."""
    settings = {k: str(v) for k, v in verdict.provenance.settings.items() if k != "mode"}
    return {"prompt_hash": verdict.provenance.prompt_hash or "–", **settings}


def _differing(described: list[dict[str, str]]) -> list[str]:
    """The settings whose values are not the same in all of them."""
    names = sorted({name for settings in described for name in settings})
    return [name for name in names if len({settings.get(name) for settings in described}) > 1]
