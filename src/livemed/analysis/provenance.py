"""Run provenance: what ran, with which models and prompts, at what cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel

from livemed.records import Record, Run, Usage


class RunRow(BaseModel):
    run_id: str
    command: str
    started_at: str
    outcome: str
    livemed_version: str
    models: list[str]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class UsageRow(BaseModel):
    model: str
    calls: int
    cache_hits: int
    failures: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


class PromptRow(BaseModel):
    kind: str
    model: str
    prompt_hash: str
    livemed_version: str
    records: int


def runs_table(runs: Iterable[Run]) -> list[RunRow]:
    rows = []
    for run in sorted(runs, key=lambda r: r.started_at):
        rows.append(
            RunRow(
                run_id=run.run_id,
                command=run.command,
                started_at=run.started_at.strftime("%Y-%m-%d %H:%M UTC"),
                outcome=run.outcome,
                livemed_version=run.provenance.livemed_version,
                models=sorted(set(run.models) | set(run.usage)),
                prompt_tokens=sum(u.prompt_tokens for u in run.usage.values()),
                completion_tokens=sum(u.completion_tokens for u in run.usage.values()),
                cost_usd=run.cost_usd,
            )
        )
    return rows


def usage_by_model(runs: Iterable[Run]) -> list[UsageRow]:
    totals: dict[str, Usage] = {}
    for run in runs:
        for model, usage in run.usage.items():
            totals[model] = totals[model].add(usage) if model in totals else usage
    return [
        UsageRow(
            model=model,
            calls=u.calls,
            cache_hits=u.cache_hits,
            failures=u.failures,
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            cost_usd=u.cost_usd,
        )
        for model, u in sorted(totals.items())
    ]


def prompt_hashes(records: Iterable[Record]) -> list[PromptRow]:
    """(record kind, model, prompt hash, livemed version) with the number of records made that way."""
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for record in records:
        p = record.provenance
        if p.model_id or p.prompt_hash:
            counts[(record.kind, p.model_id or "-", p.prompt_hash or "-", p.livemed_version)] += 1
    return [
        PromptRow(kind=k, model=m, prompt_hash=h, livemed_version=v, records=n)
        for (k, m, h, v), n in sorted(counts.items())
    ]
