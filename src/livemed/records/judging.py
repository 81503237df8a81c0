"""Judge validation: metric-grounded preference pairs, judges' verdicts on them, validity cards."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from livemed.records.base import Record, short_hash

Slot = Literal["A", "B"]
Family = Literal["decomposable", "atomic"]
Tertile = Literal["hard", "medium", "easy"]
Order = Literal["original", "swapped"]
JudgeMode = Literal["pairwise", "pointwise"]


class Candidate(BaseModel):
    """One candidate response to a benchmark item, made by named mutation operators, with its metric."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, description="stable within the item (e.g. 'gold', 'option:B', 'drop:P:1')")
    text: str = Field(min_length=1, description="what a model would answer: short rationale + answer")
    answer: str = Field(description="the answer in the task's format (label, number, JSON)")
    operators: list[str] = Field(default_factory=list, description="the mutations applied, in order")
    metric: float = Field(description="the task metric against the gold answer (see `higher_better`)")
    higher_better: bool = True
    correct: bool | None = Field(default=None, description="the benchmark's own correctness rule, if any")
    rank: int = Field(default=0, ge=0, description="0 = best candidate of the item")


class Pair(Record):
    """A chosen/rejected pair from one benchmark item; `gold` is the slot holding the chosen response.

    `a` and `b` give the texts in slot order; `swapped()` is the same pair with the slots exchanged
    (the judge run asks both orders)."""

    kind: ClassVar[str] = "judge_pair"

    dataset: str = Field(min_length=1)
    family: Family
    item_id: str = Field(min_length=1)
    group: str = Field(
        default="",
        description="the item's stratum in its dataset (MedCalc calculator id, MedQA exam step, PubMedQA "
        "gold decision; '' elsewhere): `judges run --limit` samples across these",
    )
    question: str = Field(description="the task as the candidates saw it (question, note, abstract)")
    instruction: str = Field(description="the task's instruction (answer format, rubric)")
    chosen: Candidate
    rejected: Candidate
    gold: Slot
    rank_gap: int = Field(ge=1)
    tertile: Tertile | None = None
    seed: int = 0
    licence: str = Field(min_length=1)

    @property
    def id(self) -> str:
        return f"pair:{self.dataset}:{self.item_id}:{self.chosen.id}>{self.rejected.id}"

    @property
    def parent_id(self) -> str:
        return f"{self.dataset}:{self.item_id}"

    def slots(self, order: Order = "original") -> tuple[Candidate, Candidate, Slot]:
        """(candidate in slot A, candidate in slot B, gold slot) for the given order."""
        first, second = (self.chosen, self.rejected) if self.gold == "A" else (self.rejected, self.chosen)
        if order == "swapped":
            return second, first, "B" if self.gold == "A" else "A"
        return first, second, self.gold


class JudgeVerdict(Record):
    """One judge sample on one pair in one slot order: a verdict, or invalid output (never coerced).

    Every reply that came is a verdict (invalid when it does not parse, `raw` as it came); only a
    transport failure is not: it is a `Rejection` (stage `judges`, reason `call_failed`) and the sample
    is asked again on the next run. `config` is the hash of what else changes a verdict (endpoint,
    prompt hash, temperature, max_tokens, parse policy: `provenance.settings` names them), part of the
    id: verdicts of another configuration are other records."""

    kind: ClassVar[str] = "judge_verdict"

    pair_id: str = Field(min_length=1)
    dataset: str = Field(min_length=1)
    family: Family
    tertile: Tertile | None = None
    judge: str = Field(min_length=1)
    mode: JudgeMode = "pairwise"
    order: Order = "original"
    sample: int = Field(default=0, ge=0)
    gold: Slot
    verdict: Slot | Literal["tie"] | None = Field(description="None = invalid (non-compliant) output")
    scores: list[float] = Field(default_factory=list, description="pointwise: the scores of A and B")
    reason: str = Field(default="", description="why the output was invalid, when it was")
    raw: str = Field(default="", description="the reply's content exactly as it came")
    reasoning: str = Field(default="", description="reasoning the endpoint sent apart from the content")
    config: str = Field(default="", description="the configuration's hash (`config_key`); '' before it")
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def valid(self) -> bool:
        return self.verdict is not None

    @property
    def correct(self) -> bool:
        return self.verdict == self.gold

    @property
    def id(self) -> str:
        return verdict_id(self.pair_id, self.judge, self.mode, self.order, self.sample, self.config)

    @property
    def parent_id(self) -> str:
        return self.pair_id


def verdict_id(pair_id: str, judge: str, mode: str, order: str, sample: int, config: str = "") -> str:
    at = f"@{config}" if config else ""  # verdicts stored before configurations had ids without one
    return f"verdict:{pair_id}:{judge}:{mode}{at}:{order}:{sample}"


def config_key(config: dict[str, Any]) -> str:
    """The short hash of a judge run's configuration (keys sorted)."""
    return short_hash(*(f"{k}={config[k]}" for k in sorted(config)), length=12)


class ValidityCard(Record):
    """What the validation battery measured for one grader configuration (model id, endpoint, prompt
    hash, settings): `metrics` holds every figure with its n, interval, the trivial graders' figures and
    a verdict (`livemed.judges.certification`); `verdict` is the card's: passed, failed or not enough
    data ("" on a card made before cards had one)."""

    kind: ClassVar[str] = "validity_card"

    grader: str = Field(min_length=1)
    endpoint: str = ""
    prompt_hash: str = ""
    settings: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    verdict: Literal["passed", "failed", "not enough data", ""] = ""

    @property
    def key(self) -> str:
        return card_key(self.endpoint, self.prompt_hash, self.settings)

    @property
    def id(self) -> str:
        return f"card:{self.grader}:{self.key}"

    @property
    def parent_id(self) -> str:
        return self.grader


def card_key(endpoint: str, prompt_hash: str, settings: dict[str, Any]) -> str:
    parts = [f"{k}={settings[k]}" for k in sorted(settings)]
    return short_hash(endpoint, prompt_hash, *parts, length=12)
