"""`livemed eval`: import (optional), answer, grade and score in one streaming process.

The same stages as `import-healthbench|import-kqa|import`, `answer`, `grade` and `scores`, composed by
`livemed.live.stream` (each answer graded as soon as it is stored) instead of run one after the
other: the same records and ids, cache, resume, leases (`answer:<model>` per candidate and
`grade:<judge>`), failure rules and cost limit. One `Run` (command `eval`) records it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from livemed.cli.common import engine_progress, make_engine, model_run, print_usage, stage_progress
from livemed.cli.context import DOMAIN, AppState, console, err_console, state
from livemed.cli.executors import run_elsewhere
from livemed.cli.root import app
from livemed.cli.stage_commands import (
    CACHE_RO,
    EXECUTOR,
    GRADER_SETUP,
    GRADER_TEMPLATE,
    LIMIT,
    MAX_COST,
    NO_CACHE,
    check_setup,
    grader_for,
    print_result,
)
from livemed.cli.window_options import AFTER_CUTOFF, MAX_DATE, MIN_DATE
from livemed.common.atomic import check_writable, write_text
from livemed.errors import ConfigError, RunError, UserError

if TYPE_CHECKING:
    from livemed.domains import DomainPack
    from livemed.live.stream import StreamResult
    from livemed.models import Engine, Settings
    from livemed.records import Case, Run
    from livemed.score.rows import ScoreRow
    from livemed.store import Store

FORMATS = ("healthbench", "kqa", "livemed")


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    file: Path | None = typer.Argument(
        None,
        metavar="FILE",
        help="HealthBench, K-QA or livemed JSONL to import first, e.g. healthbench.jsonl; "
        "default: the store's cases.",
    ),
    models: list[str] = typer.Option(
        ...,
        "--model",
        "-m",
        metavar="MODEL",
        help="Candidate model, e.g. openai/gpt-4o-mini; repeat for several.",
    ),
    judge: str = typer.Option(
        ..., "--judge", metavar="MODEL", help="Grader model, e.g. openai/gpt-4o, or offline/lexical."
    ),
    mode: str = typer.Option(
        "per-criterion", "--mode", metavar="per-criterion|batched", help="One call per criterion, or batched."
    ),
    samples: int = typer.Option(1, "--samples", min=1, metavar="N", help="Answers per case and model."),
    temperature: float = typer.Option(
        0.0, "--temperature", min=0, max=2, metavar="T", help="Candidates' temperature."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1, metavar="N", help="Candidates' token limit, e.g. 2048."
    ),
    fmt: str | None = typer.Option(
        None, "--format", metavar="healthbench|kqa|livemed", help="FILE's format (default: detected)."
    ),
    published: str | None = typer.Option(
        None, "--published", metavar="YYYY-MM-DD", help="Date for imported cases, e.g. 2025-06-30."
    ),
    status: str | None = typer.Option(
        None, "--status", metavar="draft|validated|accepted", help="Only cases with this status."
    ),
    limit: int | None = LIMIT,
    convention: str = typer.Option(
        "livemed", "--convention", metavar="livemed|healthbench", help="Scoring convention."
    ),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Bootstrap seed (1,000 resamples)."),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        min=1,
        metavar="N",
        help="Calls in flight per model, e.g. 32 (overrides max_concurrency).",
    ),
    json_out: Path | None = typer.Option(
        None,
        "--json",
        metavar="FILE",
        help="HealthBench results JSON, simple-evals' layout, e.g. results.json (needs --convention "
        "healthbench).",
    ),
    allow_incomplete: bool = typer.Option(
        False,
        "--allow-incomplete/--no-allow-incomplete",
        help="Also rank models whose answers are not all graded (marked).",
    ),
    grader_template: Path | None = GRADER_TEMPLATE,
    grader_setup: str = GRADER_SETUP,
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
    min_date: str | None = MIN_DATE,
    max_date: str | None = MAX_DATE,
    after_cutoff: bool = AFTER_CUTOFF,
    executor: str | None = EXECUTOR,
    domain: str | None = DOMAIN,
) -> None:
    """Answer with each --model, grade every answer as soon as it exists, then score (one process)."""
    from livemed.models import Settings

    if run_elsewhere(ctx, executor):
        return

    _check(mode, convention, json_out, fmt)
    check_setup(grader_setup, grader_template)
    _check_file(file)
    models = list(dict.fromkeys(models))
    app_state = state(ctx)
    if concurrency is not None:
        _override_concurrency(app_state, [*models, judge], concurrency)
    bad, case_ids = 0, None
    if file is not None:
        case_ids, bad = _import(ctx, file, fmt or detect_format(file), published)
    cases = list(_cases(app_state, case_ids, status, limit))
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    plan = Plan(models, judge, mode, samples, Settings(temperature=temperature, max_tokens=max_tokens))
    plan.template, plan.setup = grader_template, grader_setup
    plan.domain = domain
    window = (min_date, max_date, after_cutoff)
    plan.keep = _keep(app_state, models, window)
    run = _stream(app_state, engine, cases, plan)
    _finish(app_state, run, plan, convention, seed, json_out, allow_incomplete, window)
    if bad:
        raise RunError(f"{bad} bad line(s) of {file} were skipped (listed above); the rest was evaluated")


MODES = ("per-criterion", "batched")  # grade.grader.MODES, without importing the stages before a call
CONVENTIONS = ("livemed", "healthbench")  # score.formula.CONVENTIONS (which imports NumPy)


def _check(mode: str, convention: str, json_out: Path | None, fmt: str | None) -> None:
    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if convention not in CONVENTIONS:
        raise ConfigError(f"--convention must be livemed or healthbench, got {convention!r}")
    if json_out is not None and convention != "healthbench":
        raise ConfigError("--json writes simple-evals' HealthBench results: add --convention healthbench")
    if json_out is not None:
        check_writable(json_out)  # now, not after every call is paid for
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")


def _check_file(file: Path | None) -> None:
    """FILE names a file that exists; the advice for one that does not is to name one, or none."""
    if file is not None and not file.is_file():
        what = "is a folder" if file.is_dir() else "does not exist"
        raise UserError(
            f"{file} {what}: name a HealthBench, K-QA or livemed JSONL file, or none to evaluate the "
            "store's cases"
        )


@dataclass
class Plan:
    """What to run: candidates, grader, grading mode, samples and the candidates' settings."""

    models: list[str]
    judge: str
    mode: str
    samples: int
    settings: Settings
    template: Path | None = None  # --grader-template: the judge's id becomes <judge>@tpl-<hash>
    setup: str = (
        "livemed"  # --grader-setup: how the template is sent (healthbench: ...@tpl-<hash>-healthbench)
    )
    domain: str | None = None  # --domain: the candidate's and grader's prompts, offline/unsafe's hazards
    keep: Callable[[str, Case], bool] | None = (
        None  # --min/max-date, --after-cutoff: the cases each model answers
    )


def _keep(
    app_state: AppState, models: list[str], window: tuple[str | None, str | None, bool]
) -> Callable[[str, Case], bool] | None:
    """Which cases each candidate answers under --min-date/--max-date/--after-cutoff (None: all): a case
    outside a model's window is neither answered nor graded for it, so it costs nothing."""
    if window == (None, None, False):  # no window: nothing to import (analysis.window needs SciPy)
        return None
    from livemed.cli.window_options import build_window

    chosen = build_window(app_state, *window, models)
    if not chosen.active:
        return None
    return lambda model, case: chosen.keeps(model, case.id, case.published_at)


def _stream(app_state: AppState, engine: Engine, cases: list[Case], plan: Plan) -> Run:
    """Answer and grade (`live.stream`) under one Run holding every stage's lease; print the counts."""
    from livemed.answer.ask import OfflineAnswerer
    from livemed.live.stream import answer_and_grade
    from livemed.models import bind_model
    from livemed.pipeline.runs import settle_stages

    if "offline/retrieval" in plan.models:
        raise UserError(
            "offline/retrieval needs an evidence corpus: run it with "
            "`livemed answer --model offline/retrieval --evidence demo` (or your corpus)"
        )
    pack = app_state.pack(plan.domain)
    config = app_state.config
    answerers = [
        bind_model(m, engine, "answer", OfflineAnswerer, config=config, pack=pack) for m in plan.models
    ]
    grader = grader_for(app_state, engine, plan.judge, plan.mode, plan.template, plan.setup)
    judge_model, plan.judge = plan.judge, grader.id
    unit = "criteria" if plan.mode == "per-criterion" else "answers"
    settings = {"models": plan.models, "judge": plan.judge, "mode": plan.mode, "samples": plan.samples}
    settings["domain"] = pack.name
    if plan.template is not None:
        settings |= grader.template.run_settings()
    settings.update(plan.settings.model_dump(exclude_defaults=True))
    leases = [*(f"answer:{m}" for m in plan.models), f"grade:{plan.judge}"]
    offline = all(m.startswith("offline/") for m in [*plan.models, judge_model])
    progress = stage_progress("eval") if offline else engine_progress(engine, "eval: answers and grades")
    with model_run(
        app_state.store,
        "eval",
        engine,
        settings=settings,
        models=[*plan.models, judge_model],
        lease=leases,
        progress=progress,
    ) as run:
        result = asyncio.run(
            answer_and_grade(
                app_state.store,
                cases,
                answerers,
                grader,
                settings=plan.settings,
                samples=plan.samples,
                mode=plan.mode,  # type: ignore[arg-type]
                pack=pack,
                keep=plan.keep,
            )
        )
        stages = [(f"answer {m}", r, "answers") for m, r in result.answers.items()]
        settle_stages(run, [*stages, ("grade", result.grades, unit)])
    _print_stream(result, plan)
    print_usage(engine)
    return run


def _print_stream(result: StreamResult, plan: Plan) -> None:
    for model, answered in result.answers.items():
        print_result(f"answers by {model}", answered)
    print_result(f"grades by {plan.judge} ({plan.mode})", result.grades)
    for reason, n in sorted(result.not_graded.items()):
        console.print(f"  answers not graded ({reason}): {n}")


def _finish(
    app_state: AppState,
    run: Run,
    plan: Plan,
    convention: str,
    seed: int,
    json_out: Path | None,
    allow_incomplete: bool,
    window: tuple[str | None, str | None, bool] = (None, None, False),
) -> None:
    """Score the candidates' fully graded answers, print the leaderboard, write --json; exit 1 when
    calls failed (the failure rules) or a model could not be ranked."""
    from livemed.analysis.completeness import not_ranked_line
    from livemed.cli.score_commands import (
        failure_share_lines,
        print_scores,
        ranked_rows,
        warn_bimodal,
        windowed,
    )
    from livemed.errors import RunError
    from livemed.judges.cards import card_line
    from livemed.pipeline.runs import raise_for_calls
    from livemed.score.stage import score_all

    scored = score_all(app_state.store, plan.judge, convention=convention, models=plan.models)  # type: ignore[arg-type]
    scored = windowed(app_state, scored, *window)  # --min-date/--max-date/--after-cutoff: what is ranked
    rows, ranked, left_out = ranked_rows(scored, convention, seed=seed, allow_incomplete=allow_incomplete)
    print_scores(rows, f"scores by {plan.judge} · convention: {convention} · unusable verdicts: strict")
    for line in failure_share_lines(scored, "strict"):
        console.print(line, markup=False)
    console.print(
        card_line(app_state.store, plan.judge, (score.answer_id for score in scored.scores)), markup=False
    )
    for reason, n in sorted(scored.excluded.items()):
        console.print(f"answers left out ({reason}): {n}")
    warn_bimodal(scored.scores)
    if json_out is not None:
        _write_json(json_out, ranked, plan.models, seed, app_state.store, app_state.pack(plan.domain))
    raise_for_calls(run)
    if left_out:
        raise RunError(not_ranked_line(left_out, plan.judge, unusable=bool(scored.shares)))


def _write_json(
    path: Path, ranked: list[ScoreRow], models: list[str], seed: int, store: Store, pack: DomainPack
) -> None:
    """Each model's simple-evals metrics JSON and, beside it, its `_allresults.json`, from the Score
    records of its ranked rows (read back from the store: the run keeps rows, not records)."""
    from livemed.interop import healthbench_results as R
    from livemed.records import Score

    for model in models:
        ids = [row.id for row in ranked if row.model == model]
        if not ids:
            continue
        found = store.get_many(Score, ids)
        mine = [found[i] for i in ids]  # in the run's order, as the bootstrap draws them
        target = R.results_path(path, model, len(models) > 1)
        metrics = R.simple_evals_metrics(mine, seed=seed)
        write_text(target, json.dumps(metrics, indent=2))
        full = R.allresults_path(target)
        write_text(full, json.dumps(R.simple_evals_allresults(store, mine, metrics, pack), indent=2))
        console.print(f"wrote {target} and {full}", markup=False)


def _override_concurrency(app_state: AppState, model_ids: list[str], concurrency: int) -> None:
    """--concurrency: every named model's max_concurrency for this run (its HTTP pool follows)."""
    config = app_state.config
    models = dict(config.models)
    for model_id in model_ids:
        models[model_id] = config.model_settings(model_id).model_copy(update={"max_concurrency": concurrency})
    app_state.use_config(config.model_copy(update={"models": models}))


def detect_format(path: Path) -> str:
    """healthbench (`prompt` and `rubrics`), kqa (`Question`) or livemed (`kind`), by the first line."""
    from livemed.jsonl import open_text

    with open_text(path) as handle:  # one line for a file that cannot be opened or is not text
        first = next((line for line in handle if line.strip()), b"")
    try:
        data = json.loads(first) if first else None
    except ValueError as exc:  # UnicodeDecodeError included
        raise UserError(f"{path}: cannot detect its format ({exc}); pass --format") from None
    if isinstance(data, dict) and "prompt" in data and "rubrics" in data:
        return "healthbench"
    if isinstance(data, dict) and "Question" in data:
        return "kqa"
    if isinstance(data, dict) and "kind" in data:
        return "livemed"
    raise UserError(f"{path}: not HealthBench, K-QA or livemed JSONL by its first line; pass --format")


def _import(ctx: typer.Context, file: Path, fmt: str, published: str | None) -> tuple[list[str], int]:
    """Import `file` as `import-healthbench`, `import-kqa` or `import` would; its case ids, bad lines."""
    from livemed.cli.interop_commands import load_healthbench, load_kqa

    if fmt == "healthbench":
        imported = load_healthbench(ctx, file, published)
    elif fmt == "kqa":
        imported = load_kqa(ctx, file, published)
    else:
        return _import_records(state(ctx), file)
    return imported.case_ids, imported.bad


def _import_records(app_state: AppState, file: Path) -> tuple[list[str], int]:
    from livemed.errors import InputFileError
    from livemed.jsonl import iter_jsonl
    from livemed.records import Case

    records, case_ids, bad = [], [], 0
    for item in iter_jsonl(file):
        if isinstance(item, InputFileError):
            err_console.print(f"[yellow]skipped[/] {escape(str(item))}", highlight=False)
            bad += 1
            continue
        records.append(item)
        if isinstance(item, Case):
            case_ids.append(item.id)
    written = app_state.store.put(records)
    console.print(f"{file}: imported {written} record(s), skipped {bad} bad line(s)", markup=False)
    return case_ids, bad


def _cases(
    app_state: AppState, case_ids: list[str] | None, status: str | None, limit: int | None
) -> Iterator[Case]:
    """The imported file's cases (or the store's), with --status and --limit."""
    from livemed.cli.stage_commands import select_cases
    from livemed.records import Case

    if case_ids is None:
        yield from select_cases(app_state, status, limit)
        return
    ids = list(dict.fromkeys(case_ids))
    found = app_state.store.get_many(Case, ids)
    chosen = [found[i] for i in ids if i in found and (not status or found[i].status == status)]
    yield from chosen[:limit]
