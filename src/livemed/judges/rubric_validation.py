"""Validating livemed's own rubric grader: deterministic mutations of a case's gold answer (its advice)
whose expected order of rubric scores is known, graded k times.

Mutations (docs/judges.md, "Rubric-grader validation"): `drop_advice` (one advice element removed),
`negate` (one element turned into its opposite), `contraindicated` (the action a negative criterion of
the rubric describes, added), `add_other_case` (a recommendation of another case, added), `pad`
(fluent but empty filler, added). The first three must score **lower** than the gold answer; the last
two must score **no higher**. Measured per mutation type and per axis: order accuracy, stability over
the k samples, compliance (usable verdicts ÷ verdicts asked)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Literal

from livemed.grade.grader import Judge, Mode, Target, grade_batch, grade_criterion
from livemed.models import LLM, CallFailure, Completion, Message, Settings
from livemed.pipeline.runner import StageResult, failure_cause
from livemed.records import Answer, Case, Criterion, Grade, GradeFailure, Rubric
from livemed.score import formula as S

MUTATIONS = ("drop_advice", "negate", "contraindicated", "add_other_case", "pad")
Expect = Literal["lower", "not_higher"]
EXPECT: dict[str, Expect] = {
    "drop_advice": "lower",
    "negate": "lower",
    "contraindicated": "lower",
    "add_other_case": "not_higher",
    "pad": "not_higher",
}
CASES_AT_ONCE = 16
FILLER = (
    "Looking after your health is important, and every situation is a little different. It is always "
    "worth taking your time, staying informed and keeping a positive outlook. Many people find it helpful "
    "to reflect on how they feel and to make choices that suit their own circumstances and preferences."
)


@dataclass(frozen=True)
class Variant:
    case_id: str
    mutation: str
    text: str


def _negate(sentence: str) -> str:
    stripped = sentence.strip()
    for prefix in ("Do not ", "Don't ", "Avoid "):
        if stripped.startswith(prefix):
            rest = stripped[len(prefix) :]
            return rest[:1].upper() + rest[1:]
    return f"Do not {stripped[:1].lower()}{stripped[1:]}"


def variants(case: Case, rubric: Rubric, other: Case | None, seed: int) -> list[Variant]:
    """The gold answer's mutations for one case (those the case allows)."""
    rng = random.Random(f"{seed}:rubric:{case.id}")
    advice = list(case.advice)
    out = []
    facts = {c.source_fact.strip() for c in rubric.criteria if c.polarity == "positive" and c.source_fact}
    covered = [n for n, a in enumerate(advice) if a.strip() in facts]
    i = rng.choice(covered) if covered else rng.randrange(len(advice))  # an element a criterion checks
    if len(advice) > 1:
        out.append(Variant(case.id, "drop_advice", "\n".join(a for n, a in enumerate(advice) if n != i)))
    negated = [_negate(a) if n == i else a for n, a in enumerate(advice)]
    out.append(Variant(case.id, "negate", "\n".join(negated)))
    negative = [c for c in rubric.criteria if c.polarity == "negative"]
    if negative:
        bad = rng.choice(negative)
        out.append(Variant(case.id, "contraindicated", "\n".join([*advice, f"Also: {bad.text}"])))
    if other is not None and other.id != case.id:
        out.append(Variant(case.id, "add_other_case", "\n".join([*advice, rng.choice(other.advice)])))
    out.append(Variant(case.id, "pad", "\n".join([*advice, FILLER])))
    return out


@dataclass
class SampledLLM(LLM):
    """The grader with a sample index on every call (distinct cache entries for k samples)."""

    sample: int = 0

    async def generate(
        self, messages: list[Message], settings: Settings | None = None
    ) -> Completion | CallFailure:
        settings = (settings or Settings()).model_copy(update={"sample": self.sample})
        return await super().generate(messages, settings)


def sampled(judge: Judge, sample: int) -> Judge:
    if isinstance(judge, LLM):
        return SampledLLM(judge.engine, judge.model, judge.stage, judge.refresh, sample=sample)
    return judge


@dataclass
class Graded:
    """The rubric score of one text by one sample, with its per-axis scores and verdict counts."""

    score: float | None
    axes: dict[str, float]
    usable: int
    asked: int
    call_failed: bool
    causes: list[str] = field(default_factory=list)  # details of the failed calls


async def grade_text(case: Case, rubric: Rubric, text: str, judge: Judge, mode: Mode, label: str) -> Graded:
    answer = Answer(case_id=case.id, model=f"validation/{label}", text=text)
    target = Target(answer, case, rubric)
    if mode == "batched":
        found: Sequence[Grade | GradeFailure] = await grade_batch(target, rubric.criteria, judge)
    else:
        found = await asyncio.gather(*(grade_criterion(target, c, judge) for c in rubric.criteria))
    failed = any(isinstance(g, GradeFailure) and g.call_failed for g in found)
    items = [
        S.Item(weight=c.value, met=g.met if isinstance(g, Grade) else None, axis=c.axis)
        for c, g in zip(rubric.criteria, found, strict=True)
    ]
    usable = sum(1 for g in found if isinstance(g, Grade))
    causes = [failure_cause(g) for g in found if isinstance(g, GradeFailure) and g.call_failed]
    return Graded(S.case_score(items), S.per_axis(items), usable, len(found), failed, causes)


def holds(expect: Expect, gold: float, mutant: float) -> bool:
    return mutant < gold if expect == "lower" else mutant <= gold


@dataclass
class RubricValidation:
    """Per mutation type: order accuracy, stability over samples, compliance; per axis: not-higher rate."""

    order: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    stable: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    axes: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    usable: int = 0
    asked: int = 0
    compared: int = 0  # gold/mutant comparisons attempted (one per variant and sample)
    call_failed: int = 0  # of `compared`: those with a failed grader call (left out)
    causes: Counter[str] = field(default_factory=Counter)  # why those calls failed, by detail

    def failure_line(self) -> str | None:
        """`N of M graded pairs failed: <most common cause>; run again to retry them`, or None."""
        result = StageResult(processed=self.compared, call_failed=self.call_failed, causes=self.causes)
        return result.failure_line("graded pairs")

    def as_dict(self) -> dict[str, Any]:
        return {
            "mutations": {
                m: {
                    "expect": EXPECT[m],
                    "n": len(self.order[m]),
                    "order_accuracy": fmean(self.order[m]) if self.order[m] else None,
                    "stability": fmean(self.stable[m]) if self.stable[m] else None,
                }
                for m in MUTATIONS
                if m in self.order
            },
            "order_accuracy": fmean(v for vs in self.order.values() for v in vs) if self.order else None,
            "axes": {a: fmean(v) for a, v in sorted(self.axes.items()) if v},
            "compliance": self.usable / self.asked if self.asked else None,
            "call_failed": self.call_failed,
        }


async def validate_case(
    case: Case,
    rubric: Rubric,
    other: Case | None,
    judge: Judge,
    mode: Mode,
    samples: int,
    seed: int,
    out: RubricValidation,
) -> None:
    """Grade the gold answer and each mutation `samples` times; add the outcomes to `out`."""
    gold_text = "\n".join(case.advice)
    for variant in variants(case, rubric, other, seed):
        outcomes = []
        for sample in range(samples):
            grader = sampled(judge, sample)
            gold = await grade_text(case, rubric, gold_text, grader, mode, "gold")
            mutant = await grade_text(case, rubric, variant.text, grader, mode, variant.mutation)
            out.usable += gold.usable + mutant.usable
            out.asked += gold.asked + mutant.asked
            out.compared += 1
            if gold.call_failed or mutant.call_failed:
                out.call_failed += 1
                out.causes[(gold.causes + mutant.causes)[0]] += 1  # one cause per item, as run_stage
                continue
            if gold.score is None or mutant.score is None:
                continue
            ok = holds(EXPECT[variant.mutation], gold.score, mutant.score)
            outcomes.append(ok)
            out.order[variant.mutation].append(ok)
            for axis, value in gold.axes.items():
                if axis in mutant.axes:
                    out.axes[axis].append(mutant.axes[axis] <= value)
        if outcomes:
            out.stable[variant.mutation].append(len(set(outcomes)) == 1)


async def validate(
    cases: list[tuple[Case, Rubric]],
    judge: Judge,
    *,
    mode: Mode = "per-criterion",
    samples: int = 1,
    seed: int = 0,
) -> RubricValidation:
    """The battery over `cases` (each case's "other" case is the next one, cyclically), `CASES_AT_ONCE`
    cases at a time."""
    out = RubricValidation()
    gate = asyncio.Semaphore(CASES_AT_ONCE)

    async def one(n: int, case: Case, rubric: Rubric) -> None:
        other = cases[(n + 1) % len(cases)][0] if len(cases) > 1 else None
        async with gate:
            await validate_case(case, rubric, other, judge, mode, samples, seed, out)

    await asyncio.gather(*(one(n, case, rubric) for n, (case, rubric) in enumerate(cases)))
    return out


# The verdict battery: what `judges certify` certifies a rubric grader on. Each advice element a positive
# criterion checks (a "fact") gives eight items, four whose right verdict is "met" and four "not met":
# the positive criterion is met by the gold answer and by the fact restated under a double negative
# ("There is no doubt that …"), not met when the fact is dropped or called a myth; a negative criterion
# made for the battery ("Contradicts or denies that …", the positive's axis) is met by "It is not true
# that …" and by the myth, not by the gold answer or the restatement. A rubric's own negative criterion
# gives two: met when its statement is added to the gold answer, not met by the gold answer. So every
# axis is balanced (a constant grader scores 0.5) and word matching does not pass: the double negative
# and the myth carry the fact's words with the opposite meaning.
MET_FORMS = ("gold", "no_doubt")  # the positive criterion is met by these, the battery's negative not
NOT_MET_FORMS = ("drop", "myth")  # and by these it is not; the negative is met by untrue and myth
NEGATIVE_MET_FORMS = ("untrue", "myth")
NEGATIVE_NOT_MET_FORMS = ("gold", "no_doubt")


@dataclass(frozen=True)
class Probe:
    """One battery item: a text, a criterion, and the verdict a right grader gives."""

    case_id: str
    fact: str  # the item's group: `<case id>#<advice index>` or `<case id>!<criterion id>`
    form: str
    criterion: Criterion
    text: str
    expected: bool


def _clause(sentence: str) -> str:
    """`Loperamide is used.` → `loperamide is used` (an acronym's capital kept)."""
    text = sentence.strip().rstrip(".!;")
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def _forms(advice: list[str], i: int) -> dict[str, str]:
    clause = _clause(advice[i])
    replaced = {
        "no_doubt": f"There is no doubt that {clause}.",
        "myth": f"Some people say that {clause}, but that is a myth.",
        "untrue": f"It is not true that {clause}.",
    }
    texts = {"gold": "\n".join(advice), "drop": "\n".join(a for n, a in enumerate(advice) if n != i)}
    for form, sentence in replaced.items():
        texts[form] = "\n".join(sentence if n == i else a for n, a in enumerate(advice))
    return texts


def _fact_probes(case: Case, i: int, positive: Criterion) -> list[Probe]:
    texts = _forms(list(case.advice), i)
    denial = Criterion(
        text=f"Contradicts or denies that {_clause(case.advice[i])}",
        polarity="negative",
        axis=positive.axis,
        weight=-max(1, abs(positive.weight)),
    )
    group = f"{case.id}#{i}"
    out = [Probe(case.id, group, f, positive, texts[f], f in MET_FORMS) for f in (*MET_FORMS, *NOT_MET_FORMS)]
    negative = (*NEGATIVE_MET_FORMS, *NEGATIVE_NOT_MET_FORMS)
    return out + [Probe(case.id, group, f, denial, texts[f], f in NEGATIVE_MET_FORMS) for f in negative]


def battery_items(case: Case, rubric: Rubric) -> list[Probe]:
    """The battery's items for one case: eight per fact a positive criterion checks (an advice element
    that is its source fact; a case of one element cannot drop it and gives none), two per negative
    criterion of the rubric."""
    advice = list(case.advice)
    out: list[Probe] = []
    if len(advice) > 1:
        for c in rubric.criteria:
            if c.polarity == "positive" and c.source_fact and c.source_fact.strip() in advice:
                out += _fact_probes(case, advice.index(c.source_fact.strip()), c)
    gold = "\n".join(advice)
    for c in rubric.criteria:
        if c.polarity == "negative":
            said = f"{gold}\n{c.source_fact or c.text}"
            group = f"{case.id}!{c.id}"
            out += [
                Probe(case.id, group, "stated", c, said, True),
                Probe(case.id, group, "gold", c, gold, False),
            ]
    return out


def select_items(items: list[Probe], size: int, seed: int) -> list[Probe]:
    """At most `size` items, whole groups (each balanced) taken round-robin over the axes, each axis's
    groups in a seeded order: every axis gets its share, and a constant grader still scores 0.5."""
    groups: dict[str, list[Probe]] = defaultdict(list)
    for item in items:
        groups[item.fact].append(item)
    from livemed.judges.sampling import interleave

    by_axis: dict[str, list[str]] = defaultdict(list)
    for name, members in groups.items():
        by_axis[members[0].criterion.axis].append(name)
    chosen: list[Probe] = []
    for name in interleave({axis: sorted(names) for axis, names in by_axis.items()}, f"{seed}:battery"):
        if len(chosen) >= size:
            break
        chosen += groups[name]
    return chosen


@dataclass
class ItemOutcome:
    """One item's verdicts over the k samples (None: an unusable verdict) and whether a call failed."""

    probe: Probe
    verdicts: list[bool | None] = field(default_factory=list)
    call_failed: bool = False
    cause: str = ""

    @property
    def right(self) -> bool:
        """The right verdict is a strict majority of the samples (an unusable one counts against)."""
        return sum(1 for v in self.verdicts if v is self.probe.expected) * 2 > len(self.verdicts)


async def _grade_texts(
    case: Case, rubric: Rubric, probes: list[Probe], judge: Judge, mode: Mode, sample: int
) -> list[Grade | GradeFailure]:
    """The sample's verdict on each probe: batched, one call per distinct text of the case."""
    grader = sampled(judge, sample)
    if mode != "batched":
        return list(
            await asyncio.gather(
                *(grade_criterion(_target(case, rubric, p.text), p.criterion, grader) for p in probes)
            )
        )
    by_text: dict[str, list[int]] = defaultdict(list)
    for n, probe in enumerate(probes):
        by_text[probe.text].append(n)
    found: list[Grade | GradeFailure | None] = [None] * len(probes)
    for text, members in by_text.items():
        criteria = [probes[n].criterion for n in members]
        for n, grade in zip(
            members, await grade_batch(_target(case, rubric, text), criteria, grader), strict=True
        ):
            found[n] = grade
    return [g for g in found if g is not None]


def _target(case: Case, rubric: Rubric, text: str) -> Target:
    return Target(Answer(case_id=case.id, model="validation/battery", text=text), case, rubric)


async def grade_items(
    cases: dict[str, tuple[Case, Rubric]], probes: list[Probe], judge: Judge, mode: Mode, samples: int
) -> list[ItemOutcome]:
    """Every probe graded `samples` times (`CASES_AT_ONCE` cases at a time), in the probes' order."""
    outcomes = {id(p): ItemOutcome(p) for p in probes}
    by_case: dict[str, list[Probe]] = defaultdict(list)
    for probe in probes:
        by_case[probe.case_id].append(probe)
    gate = asyncio.Semaphore(CASES_AT_ONCE)

    async def one(case_id: str, members: list[Probe]) -> None:
        case, rubric = cases[case_id]
        async with gate:
            for sample in range(samples):
                for probe, grade in zip(
                    members, await _grade_texts(case, rubric, members, judge, mode, sample), strict=True
                ):
                    _record(outcomes[id(probe)], grade)

    await asyncio.gather(*(one(c, m) for c, m in by_case.items()))
    return [outcomes[id(p)] for p in probes]


def _record(outcome: ItemOutcome, grade: Grade | GradeFailure) -> None:
    if isinstance(grade, Grade):
        outcome.verdicts.append(grade.met)
    elif grade.call_failed:
        outcome.call_failed = True
        outcome.cause = outcome.cause or failure_cause(grade)
    else:
        outcome.verdicts.append(None)
