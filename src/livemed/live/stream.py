"""`livemed eval`'s streaming composition: several candidates answer, each answer is graded at once.

No stage barrier and no second copy of either stage: every candidate's `answer_all` and one grading
stage (a `GradeJob` reading a `pipeline.runner.Feed`) run together in one event loop. Each batch of answers
an answer stage writes is handed to the grader right after it is stored (so a grade never refers to
an answer the store lacks, even after a kill), and answers stored before (an interrupted `eval`, an
earlier `livemed answer`) are graded too. Records, ids, skips, the cache and failures are exactly
those of `livemed answer` followed by `livemed grade`; calls of one model share its limits whatever
stage makes them. With several workers on one PostgreSQL store, the answers the others wrote are
handed to the grader too once the answer stages end, so every worker ends with every answer graded
(the claims decide who grades what).

```python
result = await answer_and_grade(store, cases, [llm_a, llm_b], judge, settings=Settings())
result.answers["openai/gpt-4o"].call_failed, result.grades.written["grade"]
```
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from livemed.answer.ask import OfflineAnswerer, answer_id
from livemed.answer.stage import answer_all
from livemed.common.heap import frozen_heap
from livemed.domains import DomainPack
from livemed.grade.grader import Judge, Mode, Target
from livemed.grade.stage import GradeJob, Item
from livemed.models import LLM, Settings
from livemed.pipeline.runner import Feed, StageResult, raise_first
from livemed.records import Answer, Case, Rubric
from livemed.store import Store

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class StreamResult:
    """What one streaming run did: each candidate's answer stage, the grading stage, answers not graded."""

    answers: dict[str, StageResult] = field(default_factory=dict)
    grades: StageResult = field(default_factory=StageResult)
    not_graded: Counter[str] = field(default_factory=Counter)  # reason ("no rubric") -> answers


@frozen_heap
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
    pack: DomainPack | None = None,
    keep: Callable[[str, Case], bool] | None = None,
) -> StreamResult:
    """Answer `cases` with every answerer and grade each answer as soon as it is stored (`pack`'s
    candidate and grader prompts; default: medical).

    `cases` may be a `Feed` another stage fills while this runs (`livemed update`: cases as their
    rubrics are written); each case put there is answered by every answerer, and its stored answers
    graded, as it comes. With `keep(model, case)`, each answerer gets only the cases it keeps (eval's
    date window and `--after-cutoff`): nothing is asked of the others."""
    out = StreamResult()
    rubrics: dict[str, Rubric | None] = {}  # case id -> its rubric (None: it has none), read once
    seen: list[Case] = []

    def mine(batch: Sequence[Case]) -> dict[str, list[Case]]:
        return {a.id: [c for c in batch if keep is None or keep(a.id, c)] for a in answerers}

    job = GradeJob(store, judge, mode)
    feed: Feed[Item] = Feed()

    handed: set[str] = set()

    def hand_over(answered: list[tuple[Case, Answer]]) -> None:
        unread = {case.id: case for case, _ in answered if case.id not in rubrics}
        rubrics.update(_rubrics(store, list(unread.values())))  # as answers come: the first calls go sooner
        targets = []
        for case, answer in answered:
            handed.add(answer.id)
            rubric = rubrics.get(case.id)
            if rubric is None:
                out.not_graded["no rubric"] += 1
            else:
                targets.append(Target(answer, case, rubric, pack))
        feed.put(job.items(targets))

    def arrive(batch: Sequence[Case]) -> None:
        seen.extend(batch)
        hand_over(_stored_answers(store, mine(batch), answerers, samples))

    to_answer: dict[str, Sequence[Case] | Feed[Case]]
    if isinstance(cases, Feed):
        feeds: dict[str, Feed[Case]] = {a.id: Feed() for a in answerers}
        cases.listen(lambda batch: _route(batch, arrive, feeds, mine), lambda: _close(feeds))
        to_answer = dict(feeds)
    else:
        arrive(cases)
        to_answer = dict(mine(cases))
    grading = asyncio.ensure_future(job.run(feed, batch_size=batch_size))
    answering = {
        a.id: asyncio.ensure_future(
            answer_all(
                store, to_answer[a.id], a, settings=settings, samples=samples, on_answers=hand_over, pack=pack
            )
        )
        for a in answerers
    }

    def the_rest() -> None:  # PostgreSQL: answers other workers on the store wrote meanwhile, graded here too
        if store.dialect != "postgresql":
            return
        rest = _stored_answers(store, mine(seen), answerers, samples)
        hand_over([(case, answer) for case, answer in rest if answer.id not in handed])

    await _together(list(answering.values()), grading, feed, the_rest)
    out.answers = {model: task.result() for model, task in answering.items()}
    out.grades = grading.result()
    return out


async def _together(
    answering: list[asyncio.Future[StageResult]],
    grading: asyncio.Future[StageResult],
    feed: Feed[Item],
    before_close: Callable[[], None],
) -> None:
    """Wait for every stage; the feed closes when the last answer stage ends (after `before_close`).
    If one stage raises (a budget stop, an interrupt), the others are cancelled and awaited, and that
    error is raised."""
    pending: set[asyncio.Future[StageResult]] = {*answering, grading}
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            raise_first(done)
            if all(task.done() for task in answering) and not feed.closed:
                before_close()
                feed.close()
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def _route(
    batch: list[Case],
    arrive: Callable[[list[Case]], None],
    feeds: dict[str, Feed[Case]],
    mine: Callable[[Sequence[Case]], dict[str, list[Case]]],
) -> None:
    """New cases: their stored answers first, then to each answerer's feed (those it keeps)."""
    arrive(batch)
    for model, kept in mine(batch).items():
        feeds[model].put(kept)


def _close(feeds: dict[str, Feed[Case]]) -> None:
    for feed in feeds.values():
        feed.close()


def _rubrics(store: Store, cases: Sequence[Case]) -> dict[str, Rubric | None]:
    """Each case's stored rubric, None for a case without one."""
    if not cases:
        return {}
    found = store.get_many(Rubric, [f"rubric:{case.id}" for case in cases])
    return {case.id: found.get(f"rubric:{case.id}") for case in cases}


def _stored_answers(
    store: Store,
    cases: Mapping[str, Sequence[Case]],
    answerers: Sequence[LLM | OfflineAnswerer],
    samples: int,
) -> list[tuple[Case, Answer]]:
    """The answers already stored for each candidate's cases and samples (graded like new ones)."""
    keys = [
        (case, answer_id(case.id, a.id, n)) for a in answerers for case in cases[a.id] for n in range(samples)
    ]
    found = store.get_many(Answer, [key for _, key in keys])
    return [(case, found[key]) for case, key in keys if key in found]
