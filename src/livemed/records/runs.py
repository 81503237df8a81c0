"""Runs: what each command did, with what, at what cost."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from livemed.records.base import Record, utcnow


class Usage(BaseModel):
    """Calls, tokens and cost for one model (or one model in one stage)."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    estimated_calls: int = Field(
        default=0, description="calls whose endpoint sent no usage: their tokens (and cost) are estimated"
    )

    def add(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})


class Run(Record):
    """One invocation of a livemed command: what it did, with what, at what cost."""

    kind: ClassVar[str] = "run"

    run_id: str = Field(min_length=1)
    command: str = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)
    models: list[str] = Field(default_factory=list)
    usage: dict[str, Usage] = Field(default_factory=dict, description="totals keyed by model id")
    stage_usage: dict[str, dict[str, Usage]] = Field(
        default_factory=dict, description="stage -> model -> usage"
    )
    started_at: AwareDatetime = Field(default_factory=utcnow)
    ended_at: AwareDatetime | None = None
    heartbeat_at: AwareDatetime | None = Field(
        default=None, description="last sign of life of a running command (usage is flushed with it)"
    )
    pid: int | None = None
    host: str | None = None
    outcome: Literal["running", "ok", "partial", "failed", "interrupted"] = Field(
        default="running",
        description=(
            "ok: every item done; partial: it finished, but some items ended as call failures (retried by "
            "the next run); failed: it stopped on an error, or every item it tried failed; interrupted: "
            "stopped by Ctrl-C or a signal, or found dead (killed) by a later command"
        ),
    )
    error: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    compliance: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="model -> structured outputs: first_try, repaired, failed, total"
    )

    @property
    def id(self) -> str:
        return f"run:{self.run_id}"

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd for u in self.usage.values())
