"""Build small, fully specified studies of records for the analysis and report tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from livemed.analysis.inputs import CaseScore
from livemed.records import (
    Answer,
    Case,
    Criterion,
    Doc,
    Grade,
    Narrative,
    Provenance,
    Record,
    Rejection,
    Rubric,
    Run,
    Score,
    Usage,
)

START = datetime(2024, 1, 1, tzinfo=UTC)
CONTAMINATED_CUTOFF = 240  # day: fake/strong scores higher on cases published up to then
CUTOFFS_TOML = """\
[models."fake/strong"]
cutoff = 2024-08-28
source = "test fixture: day 240"

[models."fake/weak"]
cutoff = 2024-10-27
source = "test fixture: day 300"
"""
SCRIPT = "<script>window.__pwned = 1; document.title = 'pwned'</script>"


def day(n: int) -> datetime:
    return START + timedelta(days=n)


def rows(model: str, scores: Sequence[float], days: Sequence[int] | None = None) -> list[CaseScore]:
    """CaseScores for one model on cases c0, c1, … published on the given days (default: day i)."""
    days = list(days) if days is not None else list(range(len(scores)))
    return [
        CaseScore(model=model, case_id=f"c{i}", score=s, published=day(d))
        for i, (s, d) in enumerate(zip(scores, days, strict=True))
    ]


def criteria() -> list[Criterion]:
    return [
        Criterion(
            text="Recommends urgent evaluation for chest pain", polarity="positive", axis="accuracy", weight=5
        ),
        Criterion(
            text="Accounts for the patient's renal failure",
            polarity="positive",
            axis="context_awareness",
            weight=4,
        ),
        Criterion(
            text="Explains the plan in plain words", polarity="positive", axis="communication", weight=1
        ),
        Criterion(
            text="Recommends NSAIDs despite renal failure", polarity="negative", axis="safety", weight=-8
        ),
    ]


def make_case(i: int, source: str = "forum", text: str = "") -> Case:
    return Case(
        doc_id=f"{source}:{i}",
        source=source,
        source_id=str(i),
        url=f"https://example.org/{source}/{i}",
        published=day(i * 3),
        narrative=Narrative(
            demographics=["67-year-old man"],
            symptoms=[text or f"chest pain for {i % 5 + 1} days"],
            history=["chronic kidney disease stage 4"],
        ),
        query=f"What should I do about my chest pain? (case {i})",
        advice=["Go to the emergency department now", "Avoid NSAIDs because of kidney disease"],
        specialties=["cardiology"],
        status="accepted",
    )


def study(
    n_cases: int = 40,
    models: Sequence[str] = ("openai/gpt-4o-mini", "fake/strong", "fake/weak"),
    seed: int = 0,
    script_case: int | None = 0,
) -> list[Record]:
    """Docs, rejections, cases, rubrics, answers, grades, scores and runs for a small study."""
    rng = np.random.default_rng(seed)
    out: list[Record] = []
    rubric_criteria = criteria()
    for i in range(n_cases):
        source = "forum" if i % 4 else "pubmed"
        text = SCRIPT if i == script_case else ""
        case = make_case(i, source, text)
        out.append(Doc(source=source, source_id=str(i), published=case.published, text=f"doc {i}"))
        rubric = Rubric(
            case_id=case.id,
            criteria=rubric_criteria,
            published=case.published,
            provenance=Provenance(model_id="fake/writer", prompt_hash="rubricprompt01"),
        )
        out += [case, rubric]
        for m, model in enumerate(models):
            out += _answer(case, rubric, model, m, rng, script=i == script_case)
    for j in range(6):
        out.append(
            Rejection(
                stage="prefilter" if j % 2 else "screener",
                reason="too_short" if j % 2 else "incomplete",
                record_kind="doc",
                record_id=f"forum:r{j}",
                source="forum",
                published=day(j),
            )
        )
        if not j % 2:  # a document the pre-filter rejects is never stored; one the screener rejects is
            out.append(Doc(source="forum", source_id=f"r{j}", published=day(j), text="short"))
    out.append(
        Run(
            run_id="run1",
            command="answer",
            models=list(models),
            usage={
                m: Usage(
                    calls=n_cases,
                    prompt_tokens=1000 * n_cases,
                    completion_tokens=300 * n_cases,
                    cost_usd=0.01 * n_cases,
                )
                for m in models
            },
            outcome="ok",
        )
    )
    return out


def _answer(
    case: Case, rubric: Rubric, model: str, m: int, rng: np.random.Generator, script: bool
) -> list[Record]:
    text = f"Answer from {model}: please seek care." + (f" {SCRIPT}" if script else "")
    answer = Answer(
        case_id=case.id,
        model=model,
        text=text,
        provenance=Provenance(model_id=model, prompt_hash="answerprompt01"),
    )
    skill = 0.8 - 0.2 * m
    if model == "fake/strong" and case.published <= day(CONTAMINATED_CUTOFF):
        skill += 0.2
    met = [bool(rng.random() < skill) for _ in rubric.criteria[:3]] + [bool(rng.random() < 0.5 - 0.2 * skill)]
    grades = [
        Grade(
            answer_id=answer.id,
            case_id=case.id,
            criterion_id=c.id,
            judge="fake/judge",
            met=ok,
            explanation=f"verdict on {c.text}" + (f" {SCRIPT}" if script else ""),
            provenance=Provenance(model_id="fake/judge", prompt_hash="gradeprompt001"),
        )
        for c, ok in zip(rubric.criteria, met, strict=True)
    ]
    positive = sum(c.weight for c in rubric.criteria if c.weight > 0)
    raw = sum(c.weight for c, ok in zip(rubric.criteria, met, strict=True) if ok)
    score = Score(
        answer_id=answer.id,
        case_id=case.id,
        model=model,
        judge="fake/judge",
        score=min(max(raw / positive, 0.0), 1.0),
        per_axis={
            c.axis: float(ok) if c.weight > 0 else float(not ok)
            for c, ok in zip(rubric.criteria, met, strict=True)
        },
        coverage=sum(ok for c, ok in zip(rubric.criteria, met, strict=True) if c.weight > 0) / 3,
        harm=8.0 if met[3] else 0.0,
        published=case.published,
    )
    return [answer, *grades, score]
