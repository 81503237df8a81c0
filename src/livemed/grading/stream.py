"""`livemed eval`'s streaming composition: several candidates answer, each answer is graded at once.

No stage barrier and no second copy of either stage: every candidate's `answer_all` and one grading
stage (a `GradeJob` reading a `pipeline.Feed`) run together in one event loop. Each batch of answers
an answer stage writes is handed to the grader right after it is stored (so a grade never refers to
an answer the store lacks, even after a kill), and answers stored before (an interrupted `eval`, an
earlier `livemed answer`) are graded too. Records, ids, skips, the cache and failures are exactly
those of `livemed answer` followed by `livemed grade`; calls of one model share its limits whatever
stage makes them.

```python
result = await answer_and_grade(store, cases, [llm_a, llm_b], judge, settings=Settings())
result.answers["openai/gpt-4o"].call_failed, result.grades.written["grade"]
```
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from livemed.grading.answer import OfflineAnswerer, answer_id
from livemed.grading.judge import Judge, Mode, Target
from livemed.grading.runs import GradeJob, Item, answer_all, in_flight
from livemed.models import LLM, Settings
from livemed.pipeline import Feed, StageResult, run_stage
from livemed.records import Answer, Case, Rubric
from livemed.store import Store


@dataclass
class StreamResult:
    """What one streaming run did: each candidate's answer stage, the grading stage, answers not graded."""

    answers: dict[str, StageResult] = field(default_factory=dict)
    grades: StageResult = field(default_factory=StageResult)
    not_graded: Counter[str] = field(default_factory=Counter)  # reason ("no rubric") -> answers


async def answer_and_grade(
    store: Store,
    cases: Sequence[Case] | Feed[Case],
    answerers: Sequence[LLM | OfflineAnswerer],
    judge: Judge,
    *,
    settings: Settings,
    samples: int = 1,
    mode: Mode = "per-criterion",
    batch_size: int = 64,
) -> StreamResult:
    """Answer `cases` with every answerer and grade each answer as soon as it is stored.

    `cases` may be a `Feed` another stage fills while this runs (`livemed update`: cases as their
    rubrics are written); each case put there is answered by every answerer, and its stored answers
    graded, as it comes."""
    out = StreamResult()
    rubrics: dict[str, Rubric] = {}
    job = GradeJob(store, judge, mode)
    feed: Feed[Item] = Feed()

    def hand_over(answered: list[tuple[Case, Answer]]) -> None:
        targets = []
        for case, answer in answered:
            rubric = rubrics.get(case.id)
            if rubric is None:
                out.not_graded["no rubric"] += 1
            else:
                targets.append(Target(answer, case, rubric))
        feed.put(job.items(targets))

    def arrive(batch: Sequence[Case]) -> None:
        rubrics.update(_rubrics(store, batch))
        hand_over(_stored_answers(store, batch, answerers, samples))

    to_answer: dict[str, Sequence[Case] | Feed[Case]] = {a.id: cases for a in answerers}
    if isinstance(cases, Feed):
        feeds: dict[str, Feed[Case]] = {a.id: Feed() for a in answerers}
        cases.listen(lambda batch: _route(batch, arrive, feeds), lambda: _close(feeds))
        to_answer.update(feeds)
    else:
        arrive(cases)
    grading = asyncio.ensure_future(
        run_stage(
            store,
            feed,
            job.work,
            output_id=job.output_id,
            output_kinds=job.output_kinds,
            batch_size=batch_size,
            window=in_flight(judge, batch_size),
        )
    )
    answering = {
        a.id: asyncio.ensure_future(
            answer_all(store, to_answer[a.id], a, settings=settings, samples=samples, on_answers=hand_over)
        )
        for a in answerers
    }
    await _together(list(answering.values()), grading, feed)
    out.answers = {model: task.result() for model, task in answering.items()}
    out.grades = job.finish(grading.result())
    return out


async def _together(
    answering: list[asyncio.Future[StageResult]], grading: asyncio.Future[StageResult], feed: Feed[Item]
) -> None:
    """Wait for every stage; the feed closes when the last answer stage ends. If one stage raises
    (a budget stop, an interrupt), the others are cancelled and awaited, and that error is raised."""
    pending: set[asyncio.Future[StageResult]] = {*answering, grading}
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.cancelled():
                    raise asyncio.CancelledError()
                if (error := task.exception()) is not None:
                    raise error
            if all(task.done() for task in answering):
                feed.close()
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def _route(batch: list[Case], arrive: Callable[[list[Case]], None], feeds: dict[str, Feed[Case]]) -> None:
    """New cases: their rubrics and stored answers first, then to every answerer's feed."""
    arrive(batch)
    for feed in feeds.values():
        feed.put(batch)


def _close(feeds: dict[str, Feed[Case]]) -> None:
    for feed in feeds.values():
        feed.close()


def _rubrics(store: Store, cases: Sequence[Case]) -> dict[str, Rubric]:
    found = store.get_many(Rubric, [f"rubric:{case.id}" for case in cases])
    return {rubric.case_id: rubric for rubric in found.values()}


def _stored_answers(
    store: Store, cases: Sequence[Case], answerers: Sequence[LLM | OfflineAnswerer], samples: int
) -> list[tuple[Case, Answer]]:
    """The answers already stored for these cases, candidates and samples (graded like new ones)."""
    keys = [(case, answer_id(case.id, a.id, n)) for a in answerers for case in cases for n in range(samples)]
    found = store.get_many(Answer, [key for _, key in keys])
    return [(case, found[key]) for case, key in keys if key in found]
