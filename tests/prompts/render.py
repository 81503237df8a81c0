"""Every LLM prompt rendered for two demo cases (a forum thread and a case report), as text files.

`tests/prompts/test_snapshots.py` compares the rendered prompts with `snapshots/*.txt`, so every
change to a prompt is a visible diff in review. After changing a prompt on purpose, regenerate:

    .venv/bin/python -m tests.prompts.render            # rewrite snapshots/*.txt
    .venv/bin/python -m tests.prompts.render --cases    # also re-derive demo_cases.json (rarely)

The two documents are the bundled demo's (`livemed.demo`); their cases (`demo_cases.json`) were
screened once by the offline curation baseline and are frozen, so a change to the baseline's rules
does not move the snapshots; only a change to a prompt builder does.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path

from livemed.analysis.diagnose import messages as taxonomy_messages
from livemed.analysis.taxonomy import TaxonomyItem, criterion_results
from livemed.answer.ask import candidate_messages, conversation
from livemed.curate.baseline import curate_baseline
from livemed.curate.controller import Controller
from livemed.curate.screener import Screener, screener_messages
from livemed.curate.validator import DEFAULT_CHECKLIST, align_messages, query_messages
from livemed.demo import demo_docs_path
from livemed.grade.grader import batched_messages, per_criterion_messages
from livemed.models import LLM, Engine, Message
from livemed.records import Answer, Case, Criterion, Doc, EvidenceRef, Grade, Rubric, Score
from livemed.rubrics.check import DraftCriterion, Finding
from livemed.rubrics.prompts import criteria_prompt, repair_prompt, themes_prompt, weights_prompt

HERE = Path(__file__).parent
SNAPSHOTS = HERE / "snapshots"
CASES = HERE / "demo_cases.json"
DOC_IDS = ("demo:2024-01-palpitations-coffee", "demo:2024-06-atrial-fibrillation-new")
CRITERIA = [
    Criterion(text="Advises cutting down on coffee, such as fewer cups a day", polarity="positive",
              axis="completeness", weight=6, theme="lifestyle"),
    Criterion(text="Advises urgent care for chest pain, fainting or breathlessness", polarity="positive",
              axis="safety", weight=8, theme="red flag"),
    Criterion(text="Recommends a decongestant despite the palpitations", polarity="negative",
              axis="safety", weight=-8, theme="medication safety"),
]  # fmt: skip
ANSWER = "Try cutting down to one coffee a day. If you get chest pain or faint, call an ambulance."
# One narrative fact and one advice element of each demo case, paraphrased so that the fuzzy match
# misses them: the Controller's LLM audit is sent exactly those, each against its own source.
PARAPHRASED = {
    "demo:2024-01-palpitations-coffee": ("medications", 0, "Takes atorvastatin nightly.", 1,
                                         "Cut coffee down to a cup or two daily and skip energy drinks."),
    "demo:2024-06-atrial-fibrillation-new": ("exam_labs", 3, "Echocardiography: structurally normal.", 2,
                                             "Aspirin should not be used to prevent stroke in AF."),
}  # fmt: skip


def demo_docs() -> dict[str, Doc]:
    docs = {}
    for line in demo_docs_path().read_text(encoding="utf-8").splitlines():
        doc = Doc.model_validate_json(line)
        if doc.id in DOC_IDS:
            docs[doc.id] = doc
    return docs


async def _screen(docs: dict[str, Doc]) -> list[Case]:
    async with Engine() as engine:
        screener = Screener(LLM(engine, curate_baseline(), stage="screener"))
        found = [await screener.screen(docs[i]) for i in DOC_IDS]
    return [c for c in found if isinstance(c, Case)]


def demo_cases() -> list[Case]:
    return [Case.model_validate(c) for c in json.loads(CASES.read_text(encoding="utf-8"))]


def _user(prompt: str) -> list[Message]:
    return [{"role": "user", "content": prompt}]


def _builders(case: Case, doc: Doc) -> dict[str, Callable[[], list[Message]]]:
    drafts = [
        DraftCriterion(text=c.text, polarity=c.polarity, axis=c.axis, weight=c.weight) for c in CRITERIA
    ]
    evidence = {i: [EvidenceRef(id=f"demo:evidence#{i}", snippet=f"Evidence passage {i}.")] for i in (0, 2)}
    shown = {i: case.advice[i] for i in evidence if i < len(case.advice)}
    return {
        "screener": lambda: screener_messages(doc),
        "validator-query": lambda: query_messages(case, DEFAULT_CHECKLIST),
        "validator-align": lambda: align_messages(shown, evidence),
        "controller-audit": lambda: [
            m for sent in Controller().requests(paraphrased(case), doc) for m in sent
        ],
        "rubric-1-themes": lambda: _user(themes_prompt(case)),
        "rubric-2-criteria": lambda: _user(criteria_prompt(case, case.advice[:2])),
        "rubric-3-weights": lambda: _user(
            weights_prompt(case, [(c.polarity, c.text) for c in CRITERIA], ["lifestyle", "red flag"])
        ),
        "rubric-repair": lambda: _user(
            repair_prompt(case, drafts, [Finding("omission_negative", "#2 'Fails to…': an omission")])
        ),
        "answer": lambda: candidate_messages(case),
        "grader-per-criterion": lambda: per_criterion_messages(conversation(case), ANSWER, CRITERIA[2]),
        "grader-batched": lambda: batched_messages(conversation(case), ANSWER, CRITERIA),
        "taxonomy": lambda: taxonomy_messages(_taxonomy_item(case)),
    }


def paraphrased(case: Case) -> Case:
    """The case with its `PARAPHRASED` fact and advice element."""
    field, n, fact, i, advice = PARAPHRASED[case.doc_id]
    facts = list(getattr(case.narrative, field))
    facts[n] = fact
    narrative = case.narrative.model_copy(update={field: facts})
    return case.model_copy(
        update={"narrative": narrative, "advice": [*case.advice[:i], advice, *case.advice[i + 1 :]]}
    )


def _taxonomy_item(case: Case) -> TaxonomyItem:
    rubric = Rubric(case_id=case.id, criteria=CRITERIA)
    answer = Answer(case_id=case.id, model="demo/model", text=ANSWER)
    met = {0: True, 1: False, 2: False}
    grades = [
        Grade(answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge="demo/judge", met=met[n],
              explanation="scripted")
        for n, c in enumerate(CRITERIA)
    ]  # fmt: skip
    score = Score(answer_id=answer.id, case_id=case.id, model="demo/model", judge="demo/judge", score=0.4,
                  coverage=0.4, harm=0.0)  # fmt: skip
    return TaxonomyItem(score, case, rubric, answer, criterion_results(rubric, grades))


def render_all() -> dict[str, str]:
    """`<case kind>-<prompt>` -> the rendered messages, each under a `### <role>` line."""
    docs = demo_docs()
    out = {}
    for case in demo_cases():
        kind = "report" if case.query_derived else "thread"
        for name, build in _builders(case, docs[case.doc_id]).items():
            out[f"{kind}-{name}"] = "".join(f"### {m['role']}\n{m['content']}\n" for m in build())
    return out


def main(argv: list[str]) -> None:
    if "--cases" in argv:
        cases = asyncio.run(_screen(demo_docs()))
        CASES.write_text(json.dumps([c.model_dump(mode="json") for c in cases], indent=1) + "\n", "utf-8")
    SNAPSHOTS.mkdir(exist_ok=True)
    for old in SNAPSHOTS.glob("*.txt"):
        old.unlink()
    rendered = render_all()
    for name, text in rendered.items():
        (SNAPSHOTS / f"{name}.txt").write_text(text, encoding="utf-8")
    print(f"wrote {len(rendered)} snapshots to {SNAPSHOTS}")


if __name__ == "__main__":
    main(sys.argv[1:])
