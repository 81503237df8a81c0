"""`livemed rubrics`, `livemed answer` and `livemed grade`, and the options they share with `eval` and
`livemed judges`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from livemed.cli.common import finish_run, make_engine, model_run, progress_for
from livemed.cli.context import (
    DOMAIN,
    RUBRIC_VERSION,
    AppState,
    console,
    counted,
    err_console,
    rubric_choice,
    state,
)
from livemed.cli.executors import HELP as EXECUTOR_HELP
from livemed.cli.executors import run_elsewhere
from livemed.cli.root import app
from livemed.errors import ConfigError, UserError

if TYPE_CHECKING:
    from livemed.domains import DomainPack
    from livemed.evidence.corpus import Passage
    from livemed.models import Engine
    from livemed.pipeline.runner import StageResult
    from livemed.records import Case

judges_app = typer.Typer(help="Validate graders against human labels.", no_args_is_help=True)
app.add_typer(judges_app, name="judges")

NO_CACHE = typer.Option(False, "--no-cache", help="Do not read or write the response cache.")
CACHE_RO = typer.Option(False, "--cache-read-only", help="Only use cached responses; never call a model.")
MAX_COST = typer.Option(
    None,
    "--max-cost",
    min=0,
    metavar="USD",
    help="Stop before spending more than this many US dollars, e.g. 5.",
)
LIMIT = typer.Option(None, "--limit", min=1, metavar="N", help="Process at most this many cases, e.g. 50.")
EXECUTOR = typer.Option(None, "--executor", metavar="inprocess|ray", help=EXECUTOR_HELP)


GRADER_TEMPLATE = typer.Option(
    None,
    "--grader-template",
    metavar="FILE",
    help="Grade with your own prompt file, e.g. grader.txt ({conversation} {response} {criterion} {points}, "
    "or HealthBench's <<conversation>> <<rubric_item>>); the judge becomes <judge>@tpl-<hash>.",
)
GRADER_SETUP = typer.Option(
    "livemed",
    "--grader-setup",
    metavar="livemed|healthbench",
    help="How the --grader-template is sent: livemed's (temperature 0, one repair), or healthbench: as "
    "simple-evals' HealthBench runner (its system message, temperature 0.5, 2048 max tokens, asked "
    "again until the reply parses, at most max_retries + 1 times); the judge becomes "
    "<judge>@tpl-<hash>-healthbench.",
)


def grader_for(
    app_state: AppState, engine: Engine, judge: str, mode: str, template: Path | None, setup: str = "livemed"
) -> Any:
    """The judge `grade` and `eval` use: a baseline, an LLM, or an LLM with the user's grader template
    (sent under `setup`, `--grader-setup`)."""
    from livemed.grade.grader import OfflineGrader
    from livemed.grade.template import load_template, with_template
    from livemed.models import LLM, bind_model

    grader = bind_model(judge, engine, "grade", OfflineGrader, config=app_state.config)
    if template is None:
        check_setup(setup, template)
        return grader
    if not isinstance(grader, LLM):
        raise ConfigError(f"--grader-template needs a model judge; {judge} is a baseline without a prompt")
    if mode != "per-criterion":
        raise ConfigError("--grader-template grades one criterion per call: use --mode per-criterion")
    return with_template(grader, load_template(template, setup))


def check_setup(setup: str, template: Path | None) -> None:
    """`--grader-setup` names a setup, and one other than livemed's comes with the template it sends."""
    from livemed.grade.template import SETUPS

    if setup not in SETUPS:
        raise ConfigError(f"--grader-setup must be one of {', '.join(SETUPS)}, got {setup!r}")
    if setup != "livemed" and template is None:
        raise ConfigError(
            f"--grader-setup {setup} sends a grader template as simple-evals does: add --grader-template "
            "FILE (HealthBench's grader prompt, see docs/judges.md)"
        )


def select_cases(app_state: AppState, status: str | None, limit: int | None) -> Iterator[Case]:
    from livemed.records import Case

    count = 0
    for case in app_state.store.iter(Case):
        if status and case.status != status:
            continue
        if limit is not None and count >= limit:
            return
        count += 1
        yield case


def count_cases(app_state: AppState, status: str | None, limit: int | None) -> int:
    """How many cases `select_cases` yields, without reading them whole (a status: one small view)."""
    if status is None:
        found = app_state.store.count().get("case", 0)
    else:
        from pydantic import TypeAdapter
        from typing_extensions import TypedDict

        class Status(TypedDict, total=False):
            status: str

        view = TypeAdapter(Status)
        found = sum(v.get("status", "draft") == status for _, v in app_state.store.fields("case", view))
    return found if limit is None else min(found, limit)


def print_result(what: str, result: StageResult) -> None:
    written = ", ".join(counted(n, k) for k, n in sorted(result.written.items())) or "nothing"
    console.print(f"{what}: {result.seen} seen, {result.skipped} already done, wrote {written}")
    for reason, n in sorted(result.rejected.items()):
        example = result.examples.get(reason, "")
        console.print(
            f"  rejected ({reason}): {n}" + (f" — e.g. {example[:160]}" if example else ""), markup=False
        )


@app.command()
def rubrics(
    ctx: typer.Context,
    writer: str = typer.Option(
        ..., "--writer", metavar="MODEL", help="Rubric writer model, e.g. openai/gpt-4o, or offline/rules."
    ),
    status: str | None = typer.Option(
        None, "--status", metavar="draft|validated|accepted", help="Only cases with this status."
    ),
    limit: int | None = LIMIT,
    retry_rejected: bool = typer.Option(
        False, "--retry-rejected", help="Try cases whose rubric was rejected again."
    ),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
    domain: str | None = DOMAIN,
) -> None:
    """Write and check a rubric for every case without one (Rubric, or a Rejection with the findings)."""
    from livemed.models import bind_model
    from livemed.pipeline.runs import settle
    from livemed.rubrics.stage import without_verdicts, write_rubrics
    from livemed.rubrics.write import OfflineWriter

    app_state = state(ctx)
    store = app_state.store
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    pack = app_state.pack(domain)
    model = bind_model(writer, engine, "rubrics", OfflineWriter, config=app_state.config, pack=pack)
    cases = list(select_cases(app_state, status, limit))
    todo, rejected = (cases, set()) if retry_rejected else without_verdicts(store, cases)
    if rejected:
        console.print(
            f"skipping {len(rejected)} case(s) whose rubric was rejected (--retry-rejected to retry)"
        )
    with model_run(
        store,
        "rubrics",
        engine,
        settings={"writer": writer, "domain": pack.name},
        models=[writer],
        lease=f"rubrics:{writer}",
        progress=progress_for(engine, writer, f"rubrics by {writer}", total=len(todo)),
    ) as run:
        result = asyncio.run(write_rubrics(store, todo, model, pack=pack))
        settle(run, result, "cases")
    print_result("rubrics", result)
    report_fact_coverage(app_state, todo, pack)
    report_reference_coverage(app_state, cases)
    finish_run(engine, run)


def report_fact_coverage(app_state: AppState, cases: list[Case], pack: DomainPack) -> None:
    """The run's fact coverage (`rubrics.coverage.run_summary`): criteria resting only on facts the
    candidate sees, and criteria dropped for an unseen fact."""
    from livemed.records import Rubric
    from livemed.rubrics.coverage import run_summary

    found = app_state.store.get_many(Rubric, [f"rubric:{case.id}" for case in cases])
    pairs = [(case, found[f"rubric:{case.id}"]) for case in cases if f"rubric:{case.id}" in found]
    if pairs:
        console.print(run_summary(pairs, pack), markup=False)


def report_reference_coverage(app_state: AppState, cases: list[Case]) -> None:
    """For cases with a reference rubric (K-QA Must_have): how many statements positive criteria cover."""
    from livemed.interop.kqa import REFERENCE_NAMESPACE
    from livemed.records import Rubric
    from livemed.rubrics.check import reference_coverage

    references = app_state.store.state_items(REFERENCE_NAMESPACE)
    covered = total = rubrics_seen = 0
    for case in cases:
        reference, rubric = references.get(case.id), app_state.store.get(Rubric, f"rubric:{case.id}")
        if reference is None or rubric is None:
            continue
        hit, n = reference_coverage(rubric.criteria, reference.get("must_have", []))
        covered, total, rubrics_seen = covered + hit, total + n, rubrics_seen + 1
    if total:
        console.print(
            f"reference Must_have statements covered by positive criteria: {covered}/{total} "
            f"({covered / total:.0%}) over {rubrics_seen} rubric(s) [≥ 60% of content words]"
        )


def _retrieval_corpus(
    app_state: AppState, evidence: str | None, cases: Callable[[], Iterator[Case]], samples: int, model: str
) -> dict[str, Any]:
    """A retrieving baseline's corpus and its cached BM25 index; nothing to load when every case is
    answered (`cases()`: a fresh pass over the cases each time it is called)."""
    from livemed.answer.ask import answer_id
    from livemed.evidence.factory import default_index_dir
    from livemed.pipeline.runner import batched

    for chunk in batched(cases(), 500):
        wanted = [answer_id(case.id, model, n) for case in chunk for n in range(samples)]
        if len(app_state.store.has("answer", wanted)) < len(wanted):
            index_dir = default_index_dir(app_state.config.curate.index_dir)
            return {"corpus": _corpus(app_state, evidence, cases()), "index_dir": index_dir}
    return {}  # no answer to write: the baseline is never asked, so no index is built


def _corpus(app_state: AppState, evidence: str | None, cases: Iterable[Case]) -> list[Passage]:
    """Passages for offline/retrieval: --evidence, else [curate] evidence, else the cases' own evidence."""
    from livemed.evidence.corpus import Passage
    from livemed.evidence.factory import load_passages

    path = evidence or app_state.config.curate.evidence
    if path is not None:
        return load_passages(path, app_state.config.curate.evidence_format)
    pooled = {
        ref.id: ref.snippet
        for case in cases
        if case.validation
        for check in case.validation.advice_checks
        for ref in check.evidence
    }
    if not pooled:
        raise UserError(
            "offline/retrieval needs an evidence corpus: pass --evidence FILE (JSONL of passages)"
        )
    return [Passage(id=key, text=text) for key, text in sorted(pooled.items())]


RETRIEVING = ("offline/retrieval", "offline/memorised", "offline/drift-control")


def _declared_cutoff(app_state: AppState, model: str) -> date:
    """A simulation's cutoff, from the project's `[analysis] cutoffs` file (never guessed)."""
    from livemed.analysis.cutoffs import find_cutoff, load_cutoffs

    a, config = app_state.config.analysis, app_state.config
    found = find_cutoff(model, load_cutoffs(a.path(a.cutoffs, config.path) if a.cutoffs else None))
    if found is None:
        raise UserError(
            f'{model} is a simulation that needs a declared cutoff: add [models."{model}"] with a cutoff '
            'and a source saying "simulation" to the file named by [analysis] cutoffs in livemed.toml'
        )
    return found[1].cutoff


@app.command()
def answer(
    ctx: typer.Context,
    model: str = typer.Option(
        ...,
        "--model",
        "-m",
        metavar="MODEL",
        help="Candidate model, e.g. openai/gpt-4o-mini, or offline/reference|retrieval|unsafe|empty "
        "(baselines)"
        " or offline/memorised|drift-control (simulations).",
    ),
    samples: int = typer.Option(
        1, "--samples", min=1, metavar="N", help="Answers per case (distinct cache entries)."
    ),
    temperature: float = typer.Option(
        0.0, "--temperature", min=0, max=2, metavar="T", help="Sampling temperature."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1, metavar="N", help="Completion token limit, e.g. 2048."
    ),
    evidence: str | None = typer.Option(
        None,
        "--evidence",
        metavar="FILE|NAME",
        help="Corpus for offline/retrieval: JSONL[.gz], e.g. passages.jsonl, or `medquad` (once fetched) "
        "or `demo` (bundled).",
    ),
    status: str | None = typer.Option(
        None, "--status", metavar="draft|validated|accepted", help="Only cases with this status."
    ),
    limit: int | None = LIMIT,
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
    executor: str | None = EXECUTOR,
    domain: str | None = DOMAIN,
) -> None:
    """Run a candidate model on every case: an Answer per sample, or a Rejection (retried next run)."""
    if run_elsewhere(ctx, executor):
        return
    from livemed.answer.ask import OfflineAnswerer
    from livemed.answer.stage import answer_all
    from livemed.models import Settings, bind_model
    from livemed.pipeline.runs import settle

    app_state = state(ctx)
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)

    def cases() -> Iterator[Case]:  # read as they are answered: memory bounded by `answer_all`'s chunk
        return select_cases(app_state, status, limit)

    extra = _retrieval_corpus(app_state, evidence, cases, samples, model) if model in RETRIEVING else {}
    if model == "offline/memorised":
        extra["cutoff"] = _declared_cutoff(app_state, model)
    pack = app_state.pack(domain)
    answerer = bind_model(
        model, engine, "answer", OfflineAnswerer, config=app_state.config, pack=pack, **extra
    )
    settings = Settings(temperature=temperature, max_tokens=max_tokens)
    run_settings = {"model": model, "samples": samples, **settings.model_dump(exclude_defaults=True)}
    run_settings["domain"] = pack.name
    if samples > 1 and temperature == 0:
        err_console.print("[yellow]note:[/] --samples > 1 at temperature 0 will give near-identical answers")
    with model_run(
        app_state.store,
        "answer",
        engine,
        settings=run_settings,
        models=[model],
        lease=f"answer:{model}",
        progress=progress_for(
            engine, model, f"answers by {model}", total=count_cases(app_state, status, limit) * samples
        ),
    ) as run:
        result = asyncio.run(
            answer_all(app_state.store, cases(), answerer, settings=settings, samples=samples, pack=pack)
        )
        settle(run, result, "answers")
    print_result(f"answers by {model}", result)
    finish_run(engine, run)


@app.command()
def grade(
    ctx: typer.Context,
    judge: str = typer.Option(
        ...,
        "--judge",
        metavar="MODEL",
        help="Grader model, e.g. openai/gpt-4o, or offline/lexical (baseline).",
    ),
    mode: str = typer.Option(
        "per-criterion", "--mode", metavar="per-criterion|batched", help="One call per criterion, or batched."
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        metavar="MODEL",
        help="Only grade this candidate's answers, e.g. offline/empty.",
    ),
    retry_failures: bool = typer.Option(
        False,
        "--retry-failures",
        help="Also grade again unparsable or ambiguous verdicts (failed calls are always retried).",
    ),
    rubric_version: str = RUBRIC_VERSION,
    grader_template: Path | None = GRADER_TEMPLATE,
    grader_setup: str = GRADER_SETUP,
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
    executor: str | None = EXECUTOR,
    domain: str | None = DOMAIN,
) -> None:
    """Grade every answer against its case's rubric (Grade, or GradeFailure, per criterion).

    With --rubric-version latest-approved only criteria reviewers wrote (edits) need grading: grades are
    kept by criterion, so the unchanged ones are graded already."""
    if run_elsewhere(ctx, executor):
        return
    from livemed.answer.stage import stored_answers
    from livemed.grade.grader import MODES
    from livemed.grade.stage import grade_all, plan_stream
    from livemed.pipeline.runs import settle

    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    rubrics = rubric_choice(rubric_version)
    app_state = state(ctx)
    store = app_state.store
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    grader = grader_for(app_state, engine, judge, mode, grader_template, grader_setup)
    model_id, judge = judge, grader.id
    pack = app_state.pack(domain)
    answers = stored_answers(store, model)
    plan = plan_stream(
        store, answers, pack, judge=grader.id, retry_failures=retry_failures, rubric_version=rubrics
    )
    settings = {"judge": judge, "mode": mode, "retry_failures": retry_failures, "candidate": model}
    settings["domain"] = pack.name
    if rubrics != "writer":  # a writer-rubric run's settings stay as they were
        settings["rubric_version"] = rubrics
    if grader_template is not None:
        settings |= grader.template.run_settings()
    with model_run(
        store,
        "grade",
        engine,
        settings=settings,
        models=[model_id],
        lease=f"grade:{judge}",
        progress=progress_for(engine, judge, f"grading with {judge}", total=plan.items(mode)),
    ) as run:
        result = asyncio.run(
            grade_all(store, plan.targets, grader, mode=mode, retry_failures=retry_failures, done=plan.done)
        )
        settle(run, result, "criteria" if mode == "per-criterion" else "answers")
    on = "" if rubrics == "writer" else ", on the reviewed rubrics (latest-approved)"
    print_result(f"grades by {judge} ({mode}){on}", result)
    for reason, n in sorted(plan.skipped.items()):
        console.print(f"  answers not graded ({reason}): {n}")
    finish_run(engine, run)
