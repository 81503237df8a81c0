"""Small record builders shared by the grading and rubric tests."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from livemed.common.prompts import parse_blocks
from livemed.grade.stage import grade_all, plan_stream
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Answer, Case, Criterion, Grade, Narrative, Rubric
from livemed.records.grading import RubricChoice
from livemed.records.review import CriterionChange
from livemed.rubrics.versions import apply_change
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


# A store a reviewer changes: two cases, each answered by two models; on case 0 a reviewer edits the
# first criterion and strikes the second, on case 1 they only approve one (the criteria stay).
REVIEW_CRITERIA = [
    Criterion(
        text="Advises colchicine at a kidney-adjusted dose", polarity="positive", axis="accuracy", weight=6
    ),
    Criterion(text="Advises urgent care for fever", polarity="positive", axis="safety", weight=4),
    Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-2),
]
EDITED = Criterion(
    text="Advises urgent kidney review before colchicine", polarity="positive", axis="accuracy", weight=6
)
REVIEW_ANSWERS = {"fake/candidate": "Take colchicine", "fake/other": "Take ibuprofen and seek urgent care"}


def reviewable_store(store: Store) -> list[Answer]:
    """Cases demo:0 and demo:1 with `REVIEW_CRITERIA` as their writer's rubric, each answered by the two
    models of `REVIEW_ANSWERS`; the answers."""
    answers = []
    for i in range(2):
        case = make_case(f"demo:{i}")
        answers += [make_answer(case, text, model=model) for model, text in REVIEW_ANSWERS.items()]
        store.put([case, make_rubric(case, list(REVIEW_CRITERIA))])
    store.put(answers)
    return answers


def review(store: Store) -> None:
    """The reviewer's changes (`REVIEW_CRITERIA`'s comment), through `rubrics.versions.apply_change`."""
    first, second, third = REVIEW_CRITERIA
    apply_change(
        store, "case:demo:0", "dr-a", CriterionChange(action="edit", criterion_id=first.id, new=EDITED)
    )
    apply_change(store, "case:demo:0", "dr-a", CriterionChange(action="strike", criterion_id=second.id))
    apply_change(store, "case:demo:1", "dr-a", CriterionChange(action="approve", criterion_id=third.id))


def word_grader(messages: list[Message], settings: Settings) -> str:
    """A scripted grader: a criterion is met when the response has a word of it of five letters or more."""
    blocks = {b.name: b.text for b in parse_blocks(messages[-1]["content"])}
    words = {w for w in blocks["criterion"].lower().split() if len(w) >= 5}
    met = bool(words & set(blocks["response"].lower().split()))
    return json.dumps({"explanation": "scripted", "criteria_met": met})


WORDS = "fake/words"  # the judge id of `word_grader`


def grade_words(store: Store, model: FakeModel, choice: RubricChoice) -> tuple[int, int, int]:
    """One `grade` run by `model` (a `word_grader`, judge `WORDS`) on the rubrics `choice` picks, the
    response cache off: (calls made, criteria planned, criteria found done)."""
    before = len(model.calls)
    plan = plan_stream(store, store.iter(Answer), judge=WORDS, rubric_version=choice)
    judge = LLM(Engine(store=None, cache="off"), model, stage="grade")
    result = asyncio.run(grade_all(store, plan.targets, judge, done=plan.done))
    assert result.call_failed == 0
    return len(model.calls) - before, plan.pending, plan.done
