"""Small record builders shared by the grading and rubric tests."""

from __future__ import annotations

from datetime import UTC, datetime

from livemed.records import Answer, Case, Criterion, Grade, Narrative, Rubric
from livemed.store import Store

PUBLISHED = datetime(2025, 6, 1, tzinfo=UTC)


def make_case(doc: str = "demo:1", **overrides: object) -> Case:
    fields: dict[str, object] = {
        "doc_id": doc,
        "source": "demo",
        "source_id": doc.split(":")[-1],
        "published": PUBLISHED,
        "narrative": Narrative(
            demographics=["58-year-old man"],
            chief_complaint=["swollen painful big toe"],
            history=["chronic kidney disease stage 3"],
            allergies=["penicillin"],
        ),
        "query": "What can I take for the pain in my toe?",
        "advice": [
            "Avoid ibuprofen and other NSAIDs because of your kidney disease.",
            "Take colchicine at a kidney-adjusted dose after checking with your doctor.",
            "Seek urgent care if you develop fever or the joint becomes hot and red.",
        ],
        "status": "accepted",
    }
    fields.update(overrides)
    return Case.model_validate(fields)


def make_rubric(case: Case, criteria: list[Criterion] | None = None) -> Rubric:
    return Rubric(
        case_id=case.id,
        criteria=criteria
        or [
            Criterion(
                text="Advises colchicine at a kidney-adjusted dose",
                polarity="positive",
                axis="accuracy",
                weight=6,
            ),
            Criterion(text="Advises urgent care for fever", polarity="positive", axis="safety", weight=4),
            Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-9),
        ],
        themes=["medication safety"],
    )


def make_answer(case: Case, text: str = "Take colchicine.", model: str = "fake/candidate") -> Answer:
    return Answer(case_id=case.id, model=model, sample=0, text=text)


def graded_store(
    store: Store, verdicts: list[tuple[str, bool]], judge: str = "offline/lexical", per_case: int = 10
) -> list[Grade]:
    """Real cases, rubrics, answers and `judge`'s grades: one graded criterion per (axis, met) of
    `verdicts`, `per_case` criteria to a case (one answer each); the grades in the order given."""
    grades: list[Grade] = []
    for start in range(0, len(verdicts), per_case):
        chunk = verdicts[start : start + per_case]
        case = make_case(f"demo:{start // per_case}")
        criteria = [
            Criterion(text=f"Mentions point {start + i} on {axis}", polarity="positive", axis=axis, weight=3)
            for i, (axis, _) in enumerate(chunk)
        ]
        rubric = make_rubric(case, criteria)
        answer = make_answer(case, f"Answer to case {start // per_case}")
        made = [
            Grade(answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge=judge, met=met)
            for c, (_, met) in zip(criteria, chunk, strict=True)
        ]
        store.put([case, rubric, answer, *made])
        grades.extend(made)
    return grades
