"""Run provenance: what ran, with which models and prompts, at what cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NotRequired

from pydantic import BaseModel, TypeAdapter
from typing_extensions import TypedDict

from livemed import __version__
from livemed.records import Record, Run, Usage
from livemed.store import Store


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
    return _prompt_rows(
        (r.kind, r.provenance.model_id, r.provenance.prompt_hash, r.provenance.livemed_version)
        for r in records
    )


class _Made(TypedDict):
    livemed_version: NotRequired[str]
    model_id: NotRequired[str | None]
    prompt_hash: NotRequired[str | None]


class _Provenance(TypedDict):
    provenance: NotRequired[_Made]


_PROVENANCE = TypeAdapter(_Provenance)


def stored_prompt_hashes(store: Store, kinds: Sequence[str]) -> list[PromptRow]:
    """`prompt_hashes` of every stored record of these kinds, reading only their provenance's
    model, prompt hash and version (never whole records)."""

    def made() -> Iterable[tuple[str, str | None, str | None, str]]:
        for kind in kinds:
            for _, view in store.fields(kind, _PROVENANCE):
                p = view.get("provenance", {})
                yield kind, p.get("model_id"), p.get("prompt_hash"), p.get("livemed_version", __version__)

    return _prompt_rows(made())


def _prompt_rows(made: Iterable[tuple[str, str | None, str | None, str]]) -> list[PromptRow]:
    counts: Counter[tuple[str, str, str, str]] = Counter()
    for kind, model_id, prompt_hash, version in made:
        if model_id or prompt_hash:
            counts[(kind, model_id or "-", prompt_hash or "-", version)] += 1
    return [
        PromptRow(kind=k, model=m, prompt_hash=h, livemed_version=v, records=n)
        for (k, m, h, v), n in sorted(counts.items())
    ]
