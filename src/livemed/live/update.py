"""One incremental pass of the live loop: harvest → pre-filter → curate → rubrics → answers → grades → scores.

Composed of the existing stages, not a copy of them: `sources.run.harvest_sources` (from the
watermarks), `curate.chain.curate_store`, `rubrics.stage.write_rubrics`,
`live.stream.answer_and_grade` (each answer graded as soon as it is stored, as `livemed eval`
does) and `score.stage.score_all`. Curation, rubrics and answers+grades stream: they run at once,
each batch of new cases handed on through a `pipeline.runner.Feed` as soon as it is stored (a case is
curated → its rubric written → answered → graded while later documents are still being curated),
so a stage never refers to a record the store lacks, even after a kill. Every stage skips what is
done by record id, so a second update with nothing new pays for nothing, and an update killed at any
point (even `kill -9`) is resumed by the next one without paying a finished call twice (records, the
response cache).

Each stage is a `Run` of its own (command `harvest`, `curate`, `rubrics`, `eval`, `scores`, with
setting `update` = the update's run id) holding that stage's lease; the update is one more `Run`
(command `update`) holding the lease `update`, the store lock against overlapping updates (SQLite; on
PostgreSQL several updates share the stages by claims, `store.claims`, and one at a time harvests). Each stage
gets a fresh engine, so a stage's Run carries exactly its own usage; the update's Run carries the
sum, per model and per stage.

```python
summary, run = run_update(store, plan, tools)
for stage in summary.stages: print(stage.stage, stage.new, stage.usage.cost_usd)
```
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from livemed.config import UpdateConfig
from livemed.errors import StageBusyError
from livemed.pipeline.runner import Feed, StageResult, raise_first
from livemed.pipeline.runs import settle, settle_stages, track_run
from livemed.records import Case, Run, Usage
from livemed.store import Store

if TYPE_CHECKING:
    from livemed.curate.chain import Chain
    from livemed.domains import DomainPack
    from livemed.live.stream import StreamResult
    from livemed.models import Engine
    from livemed.prefilter import Prefilters
    from livemed.sources.base import Source

LOCK = "update"  # the lease every update holds: one update at a time per store
HARVEST_POLL_S = 0.5  # how often a worker waiting for another's harvest looks at the lease


@dataclass
class Tools:
    """What the caller builds for an update (the CLI: from livemed.toml), so this module reads no
    config file, environment or flag: a fresh engine within a budget, the curation chain over an
    engine, a model bound to an engine for a stage (an offline baseline, or an `LLM`), the sources with
    their pre-filters, the harvest's end and the cutoff, and the domain pack whose prompts, axes and
    themes the rubric, answer and grade stages use (None: medical)."""

    engine: Callable[[float | None, bool], Engine]  # (budget, cache off: a rule-based curator)
    chain: Callable[[Engine], Chain]
    bind: Callable[[Engine, str, str], Any]
    sources: Sequence[Source]
    prefilters: Prefilters
    until: datetime
    cutoff: datetime | None
    pack: DomainPack | None = None


@dataclass
class StageSummary:
    """What one stage of an update did: what was new, its usage, its Run; or why it did not run."""

    stage: str
    new: dict[str, int] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    run_id: str | None = None
    skipped: str | None = None
    error: str | None = None
    call_failed: int = 0
    processed: int = 0

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd for u in self.usage.values())

    @property
    def calls(self) -> int:
        return sum(u.calls for u in self.usage.values())


@dataclass
class UpdateSummary:
    stages: list[StageSummary] = field(default_factory=list)

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd for s in self.stages)

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.stages)

    def stage(self, name: str) -> StageSummary:
        return next(s for s in self.stages if s.stage == name)


def run_update(
    store: Store,
    plan: UpdateConfig,
    tools: Tools,
    *,
    on_stage: Callable[[StageSummary], None] | None = None,
) -> tuple[UpdateSummary, Run]:
    """One update under the store lock (`StageBusyError` when another update is running).

    `on_stage` is told of each stage as it ends (the CLI prints it). A stage's failure line (failed
    calls, a failing source, unreadable records) goes on the update's Run as its error; the stages
    after it still run on what is there."""
    summary = UpdateSummary()
    settings = plan.model_dump(exclude_defaults=True)
    models = [plan.curator, *([plan.writer] if plan.writer else []), *plan.models]
    models += [plan.judge] if plan.judge else []
    with track_run(store, "update", settings=settings, models=list(dict.fromkeys(models)), lease=LOCK) as run:
        steps = _Steps(store, plan, tools, run.run_id)
        parts: list[Callable[[], list[StageSummary]]] = [
            lambda: [steps.harvest()],
            steps.stream,  # curate, rubrics, answers and grades at once
            lambda: [steps.scores()],
        ]
        for part in parts:
            for stage in part():
                summary.stages.append(stage)
                _total(run, summary)
                store.put([run])
                if on_stage is not None:
                    on_stage(stage)
    return summary, run


def _total(run: Run, summary: UpdateSummary) -> None:
    """The update's Run: each stage's new counts and failures, usage per model and per stage."""
    run.counts = {f"{s.stage}: {k}": v for s in summary.stages for k, v in s.new.items()}
    run.counts["call_failed"] = sum(s.call_failed for s in summary.stages)
    run.counts["processed"] = sum(s.processed for s in summary.stages)
    usage: dict[str, Usage] = {}
    for stage in summary.stages:
        for model, part in stage.usage.items():
            usage[model] = usage[model].add(part) if model in usage else part
    run.usage = usage
    run.stage_usage = {s.stage: dict(s.usage) for s in summary.stages if s.usage}
    errors = [f"{s.stage}: {s.error}" for s in summary.stages if s.error]
    run.error = "; ".join(errors) or None


class _Steps:
    """The stages of one update, in order; each returns its `StageSummary`."""

    def __init__(self, store: Store, plan: UpdateConfig, tools: Tools, update_id: str) -> None:
        self.store, self.plan, self.tools, self.update_id = store, plan, tools, update_id
        self.spent = 0.0

    def _budget(self) -> float | None:
        return None if self.plan.max_cost is None else max(self.plan.max_cost - self.spent, 0.0)

    def done(self, summary: StageSummary, run: Run, engine: Engine | None) -> StageSummary:
        """`summary` of a stage that has run: its run's id, error and counts, and its engine's usage
        (flushed, and spent from the update's budget)."""
        if engine is not None:
            engine.flush()
            summary.usage = dict(engine.accounting.by_model)
            self.spent += summary.cost_usd
        summary.run_id = run.run_id
        summary.error = summary.error or run.error
        summary.call_failed = run.counts.get("call_failed", 0)
        summary.processed = run.counts.get("processed", 0)
        return summary

    def harvest(self) -> StageSummary:
        tools = self.tools
        if not tools.sources:
            return StageSummary("harvest", skipped="no sources: set [update] sources or add [sources.NAME]")
        names = [s.name for s in tools.sources]
        settings = {"update": self.update_id, "sources": names, "until": tools.until.isoformat()}
        try:
            return self._harvest(tools, settings)
        except StageBusyError:  # PostgreSQL: another update worker harvests; this one curates what it stores
            waited = self._await_harvest()
            return StageSummary(
                "harvest", skipped=f"another worker on this store harvested (waited {waited:.1f} s)"
            )

    def _await_harvest(self) -> float:
        """Wait while another worker holds the harvest lease (so this one curates the whole harvest
        with it, not the part stored so far); the seconds waited. A holder that dies frees it."""
        from livemed.store.leases import live_holder

        started = time.monotonic()
        while live_holder(self.store, "harvest") is not None:
            time.sleep(HARVEST_POLL_S)
        return time.monotonic() - started

    def _harvest(self, tools: Tools, settings: dict[str, Any]) -> StageSummary:
        from livemed.sources.run import harvest_sources

        with track_run(self.store, "harvest", settings=settings, lease="harvest") as run:
            harvested = harvest_sources(
                self.store,
                tools.sources,
                tools.prefilters,
                until=tools.until,
                cutoff=tools.cutoff,
                counts=run.counts,
            )
            new = {"documents kept": harvested.kept, "rejected": harvested.rejected}
            summary = StageSummary("harvest", new=new)
            errors, unreadable = harvested.errors, harvested.unreadable
            if unreadable:
                errors.append(
                    f"{unreadable} record(s) could not be read "
                    "(`livemed export -k rejection rejections.jsonl`)"
                )
            run.error = "; ".join(errors) or None
        return self.done(summary, run, None)

    def stream(self) -> list[StageSummary]:
        """Curation, rubrics and answers+grades at once, each new case flowing on as it is stored.

        Each stage keeps its own engine, lease and `Run` (`curate`, `rubrics`, `eval`); a stage not
        configured is skipped and the stage after it reads only what is stored. With a `max_cost`, the
        stages that run share what is left equally (they spend at the same time)."""
        plan = self.plan
        answering = bool(plan.models) and plan.judge is not None
        budget = self._budget()
        share = None if budget is None else budget / (1 + bool(plan.writer) + answering)
        with ExitStack() as runs:
            curating = _Curating(self, runs, share)
            writing = _Writing(self, runs, share) if plan.writer else None
            grading = _Grading(self, runs, share) if answering else None
            asyncio.run(_flow(self.store, curating, writing, grading))
        summaries = [
            curating.summary(),
            writing.summary() if writing else StageSummary("rubrics", skipped=_NO_WRITER),
            grading.summary() if grading else StageSummary("answers and grades", skipped=_no_answers(plan)),
        ]
        return summaries

    def scores(self) -> StageSummary:
        from livemed.score.stage import score_all

        plan = self.plan
        if not plan.models or plan.judge is None:
            return StageSummary("scores", skipped="nothing graded by this update's configuration")
        before = set(self.store.ids("score"))
        settings = {"update": self.update_id, "judge": plan.judge, "convention": plan.convention}
        with track_run(self.store, "scores", settings=settings) as run:
            scored = score_all(self.store, plan.judge, convention=plan.convention, models=plan.models)
            run.counts = {
                "score": len(scored.scores),
                **{f"excluded: {k}": v for k, v in scored.excluded.items()},
            }
        new = {"scores": sum(1 for s in scored.scores if s.id not in before)}
        return self.done(StageSummary("scores", new=new), run, None)


_NO_WRITER = "no rubric writer: set [update] writer"


def _no_answers(plan: UpdateConfig) -> str:
    missing = "candidate models ([update] models)" if not plan.models else "a judge ([update] judge)"
    return f"no {missing}"


class _Stage:
    """A streamed stage: its own engine and `Run` (with its lease), opened when the streaming starts,
    settled and finished when the stage ends (a failure raised anywhere in the stream finishes it as
    failed)."""

    name = ""
    result: StageResult

    def __init__(
        self,
        steps: _Steps,
        runs: ExitStack,
        budget: float | None,
        *,
        command: str,
        models: list[str],
        lease: str | list[str],
        settings: dict[str, Any],
        no_cache: bool = False,
    ) -> None:
        self.steps, self.result = steps, StageResult()
        self.engine = steps.tools.engine(budget, no_cache)
        self.stack = runs.enter_context(ExitStack())
        settings = {"update": steps.update_id, **settings}
        self.run = self.stack.enter_context(
            track_run(steps.store, command, settings=settings, models=models, engine=self.engine, lease=lease)
        )

    def settle(self) -> None:
        raise NotImplementedError

    def new(self) -> dict[str, int]:
        raise NotImplementedError

    def end(self) -> None:
        self.settle()
        self.stack.close()

    def summary(self) -> StageSummary:
        return self.steps.done(StageSummary(self.name, new=self.new()), self.run, self.engine)


class _Curating(_Stage):
    """The curation stage: `curate_store`, handing on the cases of each batch it writes."""

    name = "curate"

    def __init__(self, steps: _Steps, runs: ExitStack, budget: float | None) -> None:
        model = steps.plan.curator
        no_cache = model.startswith("offline/")
        super().__init__(
            steps,
            runs,
            budget,
            command="curate",
            models=[model],
            lease=f"curate:{model}",
            settings={},
            no_cache=no_cache,
        )
        self.chain = steps.tools.chain(self.engine)

    async def work(self, on_cases: Callable[[list[Case]], None] | None) -> None:
        from livemed.curate.chain import curate_store

        self.result, _ = await curate_store(self.steps.store, self.chain, on_cases=on_cases)

    def settle(self) -> None:
        settle(self.run, self.result, "documents")

    def new(self) -> dict[str, int]:
        return _written(self.result, case="cases", rejection="rejections")


class _Writing(_Stage):
    """The rubric stage: `write_rubrics`, reading the cases put on its feed."""

    name = "rubrics"

    def __init__(self, steps: _Steps, runs: ExitStack, budget: float | None) -> None:
        writer_id = steps.plan.writer or ""
        lease = f"rubrics:{writer_id}"
        super().__init__(
            steps,
            runs,
            budget,
            command="rubrics",
            models=[writer_id],
            lease=lease,
            settings={"writer": writer_id},
        )
        self.writer = steps.tools.bind(self.engine, writer_id, "rubrics")
        self.feed: Feed[Case] = Feed()

    def put(self, cases: list[Case]) -> None:
        """Cases to write rubrics for, less those whose rubric was rejected by a verdict (not retried)."""
        from livemed.rubrics.stage import without_verdicts

        todo, _ = without_verdicts(self.steps.store, cases)
        self.feed.put(todo)

    async def work(self, on_rubrics: Callable[[list[Case]], None] | None) -> None:
        from livemed.rubrics.stage import write_rubrics

        self.result = await write_rubrics(
            self.steps.store, self.feed, self.writer, pack=self.steps.tools.pack, on_rubrics=on_rubrics
        )

    def settle(self) -> None:
        settle(self.run, self.result, "cases")

    def new(self) -> dict[str, int]:
        return _written(self.result, rubric="rubrics", rejection="rejected")


class _Grading(_Stage):
    """Answers and grades: `live.stream.answer_and_grade` reading the cases put on its feed."""

    name = "answers and grades"

    def __init__(self, steps: _Steps, runs: ExitStack, budget: float | None) -> None:
        plan = steps.plan
        judge = plan.judge or ""
        leases = [*(f"answer:{m}" for m in plan.models), f"grade:{judge}"]
        settings = {"models": plan.models, "judge": judge, "mode": plan.mode}
        super().__init__(
            steps, runs, budget, command="eval", models=[*plan.models, judge], lease=leases, settings=settings
        )
        self.plan = plan
        self.answerers = [steps.tools.bind(self.engine, m, "answer") for m in plan.models]
        self.grader = steps.tools.bind(self.engine, judge, "grade")
        self.feed: Feed[Case] = Feed()
        self.stream: StreamResult | None = None

    async def work(self) -> None:
        from livemed.live.stream import answer_and_grade
        from livemed.models import Settings

        self.stream = await answer_and_grade(
            self.steps.store,
            self.feed,
            self.answerers,
            self.grader,
            settings=Settings(temperature=0.0),  # as `livemed answer` and `eval` by default
            samples=self.plan.samples,
            mode=self.plan.mode,
            pack=self.steps.tools.pack,
        )

    def settle(self) -> None:
        assert self.stream is not None
        unit = "criteria" if self.plan.mode == "per-criterion" else "answers"
        stages = [(f"answer {m}", r, "answers") for m, r in self.stream.answers.items()]
        settle_stages(self.run, [*stages, ("grade", self.stream.grades, unit)])

    def new(self) -> dict[str, int]:
        assert self.stream is not None
        new = {"answers": sum(r.written.get("answer", 0) for r in self.stream.answers.values())}
        return new | _written(self.stream.grades, grade="grades", grade_failure="unusable verdicts")


async def _flow(
    store: Store, curating: _Curating, writing: _Writing | None, grading: _Grading | None
) -> None:
    """The cases stored already go to the stage they need; each new case flows on as it is stored
    (curated → its rubric written → answered → graded). A stage's feed closes when the stage before
    it ends; if one stage raises, the others are cancelled and awaited, and that error is raised."""
    existing = list(store.iter(Case))
    with_rubric = set(store.ids("rubric"))
    if grading is not None:
        grading.feed.put(c for c in existing if f"rubric:{c.id}" in with_rubric)
    if writing is not None:
        writing.put([c for c in existing if f"rubric:{c.id}" not in with_rubric])
    closes: dict[asyncio.Future[None], tuple[_Stage, Feed[Case] | None]] = {
        asyncio.ensure_future(curating.work(writing.put if writing else None)): (
            curating,
            writing.feed if writing else None,
        )
    }
    if writing is not None:
        on_rubrics = grading.feed.put if grading else None
        closes[asyncio.ensure_future(writing.work(on_rubrics))] = (writing, grading.feed if grading else None)
    elif grading is not None:
        grading.feed.close()  # no rubric writer: only cases with a stored rubric are answered
    if grading is not None:
        closes[asyncio.ensure_future(grading.work())] = (grading, None)
    pending = set(closes)
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            _end_finished(done, closes)
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def _end_finished(
    done: set[asyncio.Future[None]], closes: dict[asyncio.Future[None], tuple[_Stage, Feed[Case] | None]]
) -> None:
    """End each stage of `done` that finished (its Run now, not when the last stage ends) and close the
    feed it filled; then raise a stage's error (each one read: one budget may stop two stages)."""
    for task in done:
        if task.cancelled() or task.exception() is not None:
            continue
        stage, feed = closes[task]
        stage.end()
        if feed is not None:
            feed.close()
    raise_first(done)


def _written(result: StageResult, **names: str) -> dict[str, int]:
    """The stage's written counts under readable names (`kind=name`), zeros included."""
    return {name: result.written.get(kind, 0) for kind, name in names.items()}


__all__ = ["LOCK", "StageSummary", "Tools", "UpdateSummary", "run_update"]
