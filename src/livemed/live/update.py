"""One incremental pass of the live loop: harvest → pre-filter → curate → rubrics → answers → grades → scores.

Composed of the existing stages, not a copy of them: `sources.run.harvest_source` (from the
watermarks), `curate.chain.curate_store`, `rubrics.write.write_rubric` over `pipeline.run_stage`,
`grading.stream.answer_and_grade` (each answer graded as soon as it is stored, as `livemed eval`
does) and `grading.scoring.score_all`. Every stage skips what is done by record id, so a second
update with nothing new pays for nothing, and an update killed at any point (even `kill -9`) is
resumed by the next one without paying a finished call twice (records, the response cache).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from livemed.config import UpdateConfig
from livemed.errors import StageBusyError
from livemed.records import Case, Run, Usage
from livemed.runs import settle, settle_stages, track_run
from livemed.store import Store

if TYPE_CHECKING:
    from livemed.curate.chain import Chain
    from livemed.models import Engine
    from livemed.pipeline import StageResult
    from livemed.prefilter import Prefilters
    from livemed.sources.base import Source

LOCK = "update"  # the lease every update holds: one update at a time per store


@dataclass
class Tools:
    """What the caller builds for an update (the CLI: from livemed.toml), so this module reads no
    config file, environment or flag: a fresh engine within a budget, the curation chain over an
    engine, a model bound to an engine for a stage (an offline baseline, or an `LLM`), the sources with
    their pre-filters, the harvest's end and the cutoff."""

    engine: Callable[[float | None, bool], Engine]  # (budget, cache off: a rule-based curator)
    chain: Callable[[Engine], Chain]
    bind: Callable[[Engine, str, str], Any]
    sources: Sequence[Source]
    prefilters: Prefilters
    until: datetime
    cutoff: datetime | None


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
        for step in (steps.harvest, steps.curate, steps.rubrics, steps.answer_and_grade, steps.scores):
            stage = step()
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

    def _done(self, summary: StageSummary, run: Run, engine: Engine | None) -> StageSummary:
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
        except StageBusyError:  # PostgreSQL: another update worker harvests; this one curates what is stored
            return StageSummary("harvest", skipped="another worker on this store is harvesting")

    def _harvest(self, tools: Tools, settings: dict[str, Any]) -> StageSummary:
        from livemed.sources.run import harvest_source

        summary, errors, unreadable = StageSummary("harvest"), [], 0
        with track_run(self.store, "harvest", settings=settings, lease="harvest") as run:
            tools.prefilters.load(self.store)
            for source in tools.sources:
                report = asyncio.run(
                    harvest_source(
                        self.store, source, tools.prefilters, until=tools.until, cutoff=tools.cutoff
                    )
                )
                run.counts.update(report.counts())
                summary.new["documents kept"] = summary.new.get("documents kept", 0) + report.kept
                summary.new["rejected"] = summary.new.get("rejected", 0) + sum(report.rejected.values())
                unreadable += sum(n for (stage, _), n in report.rejected.items() if stage == "harvest")
                errors += [report.error] if report.error else []
            if unreadable:
                errors.append(f"{unreadable} record(s) could not be read (`livemed export -k rejection`)")
            run.error = "; ".join(errors) or None
        return self._done(summary, run, None)

    def curate(self) -> StageSummary:
        from livemed.curate.chain import curate_store

        model = self.plan.curator
        engine = self.tools.engine(self._budget(), model.startswith("offline/"))
        chain = self.tools.chain(engine)
        settings = {"update": self.update_id}
        with track_run(
            self.store, "curate", settings=settings, models=[model], engine=engine, lease=f"curate:{model}"
        ) as run:
            result, _ = asyncio.run(curate_store(self.store, chain))
            settle(run, result, "documents")
        summary = StageSummary("curate", new=_written(result, case="cases", rejection="rejections"))
        return self._done(summary, run, engine)

    def _cases(self) -> list[Case]:
        return list(self.store.iter(Case))

    def rubrics(self) -> StageSummary:
        from livemed.pipeline import run_stage
        from livemed.rubrics.write import rejection_id, write_rubric

        writer_id = self.plan.writer
        if writer_id is None:
            return StageSummary("rubrics", skipped="no rubric writer: set [update] writer")
        engine = self.tools.engine(self._budget(), False)
        writer = self.tools.bind(engine, writer_id, "rubrics")
        cases = self._cases()
        verdicts = _rubric_verdicts(self.store, [rejection_id(c.id) for c in cases])
        todo = [c for c in cases if rejection_id(c.id) not in verdicts]
        settings = {"update": self.update_id, "writer": writer_id}
        with track_run(
            self.store,
            "rubrics",
            settings=settings,
            models=[writer_id],
            engine=engine,
            lease=f"rubrics:{writer_id}",
        ) as run:
            result = asyncio.run(
                run_stage(
                    self.store,
                    todo,
                    lambda case: write_rubric(case, writer),
                    output_id=lambda case: f"rubric:{case.id}",
                    output_kinds=["rubric"],
                    batch_size=16,
                )
            )
            settle(run, result, "cases")
        done = self.store.has("rubric", [f"rubric:{c.id}" for c in todo])
        stale = self.store.has("rejection", [rejection_id(c.id) for c in todo if f"rubric:{c.id}" in done])
        if stale:
            self.store.delete("rejection", sorted(stale))
        summary = StageSummary("rubrics", new=_written(result, rubric="rubrics", rejection="rejected"))
        return self._done(summary, run, engine)

    def answer_and_grade(self) -> StageSummary:
        from livemed.grading.stream import answer_and_grade
        from livemed.models import Settings

        plan = self.plan
        if not plan.models or plan.judge is None:
            missing = "candidate models ([update] models)" if not plan.models else "a judge ([update] judge)"
            return StageSummary("answers and grades", skipped=f"no {missing}")
        with_rubric = set(self.store.ids("rubric"))
        cases = [c for c in self._cases() if f"rubric:{c.id}" in with_rubric]
        engine = self.tools.engine(self._budget(), False)
        answerers = [self.tools.bind(engine, m, "answer") for m in plan.models]
        grader = self.tools.bind(engine, plan.judge, "grade")
        leases = [*(f"answer:{m}" for m in plan.models), f"grade:{plan.judge}"]
        settings = {"update": self.update_id, "models": plan.models, "judge": plan.judge, "mode": plan.mode}
        with track_run(
            self.store,
            "eval",
            settings=settings,
            models=[*plan.models, plan.judge],
            engine=engine,
            lease=leases,
        ) as run:
            result = asyncio.run(
                answer_and_grade(
                    self.store,
                    cases,
                    answerers,
                    grader,
                    settings=Settings(temperature=0.0),  # as `livemed answer` and `eval` by default
                    samples=plan.samples,
                    mode=plan.mode,
                )
            )
            unit = "criteria" if plan.mode == "per-criterion" else "answers"
            stages = [(f"answer {m}", r, "answers") for m, r in result.answers.items()]
            settle_stages(run, [*stages, ("grade", result.grades, unit)])
        new = {"answers": sum(r.written.get("answer", 0) for r in result.answers.values())}
        new.update(_written(result.grades, grade="grades", grade_failure="unusable verdicts"))
        return self._done(StageSummary("answers and grades", new=new), run, engine)

    def scores(self) -> StageSummary:
        from livemed.grading.scoring import score_all

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
        return self._done(StageSummary("scores", new=new), run, None)


def _written(result: StageResult, **names: str) -> dict[str, int]:
    """The stage's written counts under readable names (`kind=name`), zeros included."""
    return {name: result.written.get(kind, 0) for kind, name in names.items()}


def _rubric_verdicts(store: Store, ids: list[str]) -> set[str]:
    """Rubric rejections that are verdicts (lint findings): not tried again; failed calls are."""
    from livemed.records import Rejection

    found = store.get_many(Rejection, sorted(store.has("rejection", ids)))
    return {i for i, r in found.items() if not r.call_failed}


__all__ = ["LOCK", "StageSummary", "Tools", "UpdateSummary", "run_update"]
