"""One valid instance of every record type, for round-trip tests."""

from __future__ import annotations

from datetime import UTC, datetime

from livemed.records import (
    AdviceCheck,
    Answer,
    Candidate,
    Case,
    Criterion,
    Doc,
    ErrorLabel,
    EvidenceRef,
    Grade,
    GradeFailure,
    GroundedSpan,
    GroundingAudit,
    JudgeVerdict,
    Narrative,
    Pair,
    Provenance,
    Record,
    Rejection,
    Reply,
    ReplyRole,
    Rubric,
    Run,
    Score,
    Usage,
    Validation,
    ValidityCard,
)

PUBLISHED = datetime(2025, 7, 1, 9, 30, tzinfo=UTC)


def doc(source_id: str = "1", **overrides: object) -> Doc:
    fields: dict[str, object] = {
        "source": "demo",
        "source_id": source_id,
        "url": f"https://example.org/{source_id}",
        "published": PUBLISHED,
        "date_field": "first_publication_date",
        "doc_type": "thread",
        "title": "Chest tightness after running",
        "text": "I'm a 34-year-old woman with chest tightness when I run. Should I worry?",
        "replies": [
            Reply(role=ReplyRole.PHYSICIAN, author="dr_a", text="See a cardiologist.", date=PUBLISHED)
        ],
        "language": "en",
        "licence": "CC-BY-4.0",
        "metadata": {"mesh": ["Chest Pain"]},
    }
    fields.update(overrides)
    return Doc.model_validate(fields)


def case(doc_id: str = "demo:1") -> Case:
    return Case(
        doc_id=doc_id,
        source="demo",
        source_id=doc_id.split(":")[1],
        url="https://example.org/1",
        published=PUBLISHED,
        narrative=Narrative(
            demographics=["34-year-old woman"], chief_complaint=["chest tightness when running"]
        ),
        query="Should I worry about chest tightness when running?",
        advice=["See a cardiologist.", "Stop running until assessed."],
        validation=Validation(
            s_cc=True,
            s_inf=0.625,
            s_align=0.75,
            advice_checks=[
                AdviceCheck(
                    advice_index=0, score=1.0, evidence=[EvidenceRef(id="ev1", snippet="Chest pain …")]
                ),
                AdviceCheck(advice_index=1, score=0.5),
            ],
        ),
        grounding=GroundingAudit(
            passed=True, spans=[GroundedSpan(element="See a cardiologist.", field="advice", score=100.0)]
        ),
        specialties=["cardiology"],
        language="en",
        provenance=Provenance(model_id="fake/screener", prompt_hash="abc123"),
    )


def every_record() -> list[Record]:
    criterion = Criterion(
        text="Recommends a cardiology review", polarity="positive", axis="accuracy", weight=7
    )
    return [
        doc(),
        Rejection(
            stage="prefilter", reason="too_short", detail="12 words", record_kind="doc", record_id="demo:2"
        ),
        case(),
        Rubric(case_id="case:demo:1", criteria=[criterion], themes=["safety"]),
        Answer(case_id="case:demo:1", model="fake/m", text="Please see a cardiologist."),
        Grade(
            answer_id="answer:case:demo:1:fake/m:0",
            case_id="case:demo:1",
            criterion_id=criterion.id,
            judge="fake/j",
            met=True,
        ),
        GradeFailure(
            answer_id="answer:case:demo:1:fake/m:0",
            case_id="case:demo:1",
            criterion_id="c2",
            judge="fake/j",
            reason="unparsable",
            raw="maybe?",
        ),
        Score(
            answer_id="answer:case:demo:1:fake/m:0",
            case_id="case:demo:1",
            model="fake/m",
            judge="fake/j",
            score=0.7,
            per_axis={"accuracy": 1.0},
            coverage=0.7,
            harm=0.0,
        ),
        Run(run_id="r1", command="grade", usage={"fake/j": Usage(calls=2, prompt_tokens=10)}),
        ErrorLabel(
            answer_id="answer:case:demo:1:fake/m:0",
            case_id="case:demo:1",
            model="fake/m",
            classifier="offline/heuristic",
            method="heuristic",
            category="CNIF",
            rationale="missed the patient's renal function",
        ),
        *release_records(criterion),
        *judging_records(),
        *review_records(criterion),
    ]


def review_records(criterion: Criterion) -> list[Record]:
    """A reviewer, an audit sample, a label and a reviewed rubric version (records/review.py)."""
    from livemed.records import AuditSample, Label, Reviewer, RubricVersion
    from livemed.records.review import AuditItem, CriterionChange, Stratum

    grade_id = f"grade:answer:case:demo:1:fake/m:0:{criterion.id}:fake/j"
    item = AuditItem(
        grade_id=grade_id, answer_id="answer:case:demo:1:fake/m:0", case_id="case:demo:1",
        criterion_id=criterion.id, model="fake/m", stratum="safety:met", double=True,
    )  # fmt: skip
    sample = AuditSample(
        judge="fake/j", seed=1, strata=[Stratum(axis="safety", met=True, population=4, drawn=1)],
        items=[item], double_share=0.5,
    )  # fmt: skip
    label = Label(reviewer="ana", queue="audit", item_id=grade_id, verdict="met", note="clear")
    edit = criterion.model_copy(update={"text": "Names the dose"})
    version = RubricVersion(
        case_id="case:demo:1", version=1, criteria=[edit], reviewer="ana",
        change=CriterionChange(action="edit", criterion_id=criterion.id, new=edit), approved=[edit.id],
    )  # fmt: skip
    return [Reviewer(name="ana", token_sha256="c" * 64), sample, label, version]


def release_records(criterion: Criterion) -> list[Record]:
    """A release of one case with its frozen item, and a retirement (`livemed.records.releases`)."""
    from datetime import date

    from livemed.records import Release, ReleaseItem, Retirement

    rubric = Rubric(case_id="case:demo:1", criteria=[criterion], themes=["safety"])
    item = ReleaseItem(release="r1", case=case(), rubric=rubric, licence="CC0-1.0", content_hash="a" * 64)
    release = Release(
        name="r1", until=date(2026, 1, 1), release_hash="b" * 64, manifest={"case:demo:1": "a" * 64}
    )
    return [item, release, Retirement(case_id="case:demo:1", reason="leaked")]


def judging_records() -> list[Record]:
    """A judge pair, a verdict on it and a validity card (records/judging.py)."""
    chosen = Candidate(id="gold", text="Answer: B", answer="B", operators=["gold"], metric=1.0, correct=True)
    rejected = Candidate(
        id="option:A", text="Answer: A", answer="A", operators=["wrong_option:A"], metric=0.0, rank=1
    )
    pair = Pair(
        dataset="medqa", family="atomic", item_id="1", question="Which drug?", instruction="Choose.",
        chosen=chosen, rejected=rejected, gold="B", rank_gap=1, licence="MIT",
    )  # fmt: skip
    verdict = JudgeVerdict(
        pair_id=pair.id, dataset="medqa", family="atomic", judge="fake/j", gold="B", verdict=None,
        reason="no <answer>…</answer>", raw="A",
    )  # fmt: skip
    card = ValidityCard(
        grader="fake/j", endpoint="in-process", prompt_hash="abc", settings={"mode": "batched"}
    )
    return [pair, verdict, card]
