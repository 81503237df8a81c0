"""`livemed judges validate|certify|compare`: the rubric grader's own validation, validity cards, and
comparing two graders on a stored slice (docs/judges.md)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table as RichTable

from livemed.cli.common import finish_run, make_engine, model_run, print_usage
from livemed.cli.context import AppState, console, state
from livemed.cli.stage_commands import (
    CACHE_RO,
    GRADER_SETUP,
    GRADER_TEMPLATE,
    MAX_COST,
    NO_CACHE,
    check_setup,
    grader_for,
    judges_app,
)
from livemed.common.atomic import write_text
from livemed.errors import CallsFailedError, ConfigError, UserError

if TYPE_CHECKING:
    from livemed.judges.battery import Battery
    from livemed.judges.rubric_validation import ItemOutcome, RubricValidation
    from livemed.models import Engine
    from livemed.pipeline.runner import StageResult
    from livemed.records import Case, JudgeVerdict, Rubric
    from livemed.store import Store

GRADE_MODE = typer.Option(
    "per-criterion", "--mode", metavar="per-criterion|batched", help="The grader's mode."
)


def _mode(mode: str) -> str:
    if mode not in ("per-criterion", "batched"):
        raise ConfigError(f"--mode must be per-criterion or batched, got {mode!r}")
    return mode


def rubric_cases(store: Store, limit: int | None) -> list[tuple[Case, Rubric]]:
    from livemed.records import Case, Rubric

    out = []
    for case in store.iter(Case):
        rubric = store.get(Rubric, f"rubric:{case.id}")
        if rubric is not None:
            out.append((case, rubric))
        if limit is not None and len(out) >= limit:
            break
    return out


def _print_rubric(result: dict[str, Any]) -> None:
    from livemed.judges.tables import cell

    table = RichTable(title="Rubric-grader validation (mutations of the gold answer)")
    for column in ("mutation", "expected", "n", "order accuracy", "stability"):
        table.add_column(column, justify="left" if column in ("mutation", "expected") else "right")
    for name, row in result["mutations"].items():
        table.add_row(name, row["expect"], str(row["n"]), cell(row["order_accuracy"]), cell(row["stability"]))
    console.print(table)
    axes = ", ".join(f"{a} {cell(v)}" for a, v in result["axes"].items())
    console.print(
        f"order accuracy {cell(result['order_accuracy'])} · compliance {cell(result['compliance'])}"
    )
    console.print(f"per axis (mutant not above gold): {axes or '–'}")


def _rubric_battery(
    app_state: AppState,
    engine: Engine,
    grader: str,
    mode: str,
    samples: int,
    cases: int | None,
    seed: int,
    template: Path | None = None,
) -> RubricValidation | None:
    from livemed.grade.grader import OfflineGrader
    from livemed.judges.baselines import BASELINES
    from livemed.judges.rubric_validation import validate
    from livemed.models import bind_model

    if grader in BASELINES:
        return None  # a pair-judge baseline grades no rubric
    found = rubric_cases(app_state.store, cases)
    if not found:
        return None
    judge = (
        bind_model(grader, engine, "judges", OfflineGrader, config=app_state.config)
        if template is None
        else grader_for(app_state, engine, grader, mode, template)
    )
    return asyncio.run(validate(found, judge, mode=mode, samples=samples, seed=seed))  # type: ignore[arg-type]


@judges_app.command("validate")
def validate_command(
    ctx: typer.Context,
    grader: str = typer.Option(
        ..., "--grader", metavar="MODEL", help="Rubric grader model, e.g. openai/gpt-4o, or offline/lexical."
    ),
    mode: str = GRADE_MODE,
    samples: int = typer.Option(1, "--samples", min=1, metavar="K", help="Grading samples per text (k)."),
    limit: int | None = typer.Option(
        None, "--limit", min=1, metavar="N", help="At most this many cases with a rubric, e.g. 50."
    ),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Seed of the mutations."),
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write the numbers as JSON, e.g. validation.json."
    ),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
) -> None:
    """Mutate each case's gold answer (known score order) and measure how often the grader's rubric scores
    order the pair correctly, their stability over k samples and the grader's compliance."""

    app_state = state(ctx)
    if not rubric_cases(app_state.store, 1):
        raise UserError(
            "no case with a rubric in the store: run `livemed rubrics --writer offline/rules` (or import "
            "cases) first"
        )
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    settings = {"grader": grader, "mode": _mode(mode), "samples": samples, "seed": seed}
    with model_run(app_state.store, "judges validate", engine, settings=settings, models=[grader]) as run:
        validation = _rubric_battery(app_state, engine, grader, mode, samples, limit, seed)
        if validation is None:
            raise UserError(f"{grader} is a pair-judge baseline, not a rubric grader")
        run.counts = {"call_failed": validation.call_failed}
        run.error = validation.failure_line()
    result = validation.as_dict()
    _print_rubric(result)
    if json_out is not None:
        write_text(json_out, json.dumps(result, indent=2))
    print_usage(engine)
    if run.error:
        raise CallsFailedError(run.error)


NO_DATA = (
    "pairs: no --data DIR (a folder with pubmedqa/, medcalc_bench/, medqa/ and optionally medbullets/, "
    "pico/) nor $LIVEMED_SHARED_DATA"
)


def _judges_pairs(grader: str) -> bool:
    """An offline rubric grader (offline/lexical) judges no pairs; models and pair baselines do."""
    from livemed.judges.baselines import BASELINES

    return not grader.startswith("offline/") or grader in BASELINES


def _data_folder(data: Path | None) -> Path | None:
    folder = data if data is not None else os.environ.get("LIVEMED_SHARED_DATA")
    return Path(folder) if folder else None


def _make_battery(
    store: Store, grader: str, data: Path | None, options: dict[str, Any]
) -> tuple[Battery, list[str]]:
    """The battery and what is not in it. Without --data nor $LIVEMED_SHARED_DATA, no pairs: said so
    for a grader that judges pairs (its card then has the rubric part only)."""
    from livemed.judges.baselines import BASELINES
    from livemed.judges.battery import make_battery

    folder = _data_folder(data)
    cases = [] if grader in BASELINES else rubric_cases(store, options["cases"])
    battery = make_battery(
        cases,
        folder,
        seed=options["seed"],
        per_dataset=options["pairs"],
        items=options["items"],
        probes=options["probes"],
        with_pairs=_judges_pairs(grader) and folder is not None,
    )
    missing = battery.missing if folder is not None or not _judges_pairs(grader) else [NO_DATA]
    return battery, missing


def _pair_verdicts(
    store: Store,
    engine: Engine,
    app_state: AppState,
    grader: str,
    battery: Battery,
    samples: int,
    temperature: float,
) -> tuple[list[JudgeVerdict], list[JudgeVerdict], StageResult | None]:
    """Both orders, k samples, on the pairs and the length probes, stored (resumable): (verdicts on
    the pairs, on the probes, the stage)."""
    from livemed.cli.judges_commands import judge_llm
    from livemed.judges.cards import PROBE
    from livemed.judges.run import CERTIFY, JudgeRun, jobs, judge_pairs
    from livemed.records import JudgeVerdict

    if not battery.pairs:
        return [], [], None
    llm = judge_llm(app_state, engine, grader)
    asked = [*battery.pairs, *battery.probes]  # not stored as pairs: a later `judges run` asks none
    spec = JudgeRun(llm, temperature=temperature, purpose=CERTIFY)  # verdicts stored apart (resumable)
    result = asyncio.run(judge_pairs(store, asked, spec, samples=samples, window=128))
    ids = [spec.verdict_id(job) for job in jobs(asked, samples, "pairwise")]
    verdicts = list(store.get_many(JudgeVerdict, ids).values())
    plain = [v for v in verdicts if not v.dataset.startswith(PROBE)]
    return plain, [v for v in verdicts if v.dataset.startswith(PROBE)], result


def _rubric_outcomes(
    app_state: AppState,
    engine: Engine,
    grader: str,
    battery: Battery,
    options: dict[str, Any],
    template: Path | None,
    setup: str,
) -> list[ItemOutcome] | None:
    from livemed.grade.grader import OfflineGrader
    from livemed.judges.battery import rubric_outcomes
    from livemed.models import bind_model

    if not battery.items:
        return None
    mode = options["mode"]
    judge = (
        bind_model(grader, engine, "judges", OfflineGrader, config=app_state.config)
        if template is None
        else grader_for(app_state, engine, grader, mode, template, setup)
    )
    return asyncio.run(rubric_outcomes(battery, judge, mode, options["samples"]))


def _something_to_measure(store: Store, grader: str, battery: Battery, missing: list[str]) -> None:
    """A card needs the pair part or the rubric part: with neither, say what is missing (exit 2)."""
    from livemed.judges.baselines import BASELINES

    if battery.pairs or battery.items:
        return
    why = []
    if _judges_pairs(grader):
        why.append("no battery pairs (" + ("; ".join(missing) or "the datasets gave no pairs") + ")")
    if grader not in BASELINES:
        what = "no case with a rubric in the store" if not rubric_cases(store, 1) else "no rubric item"
        why.append(f"{what} (run `livemed rubrics --writer offline/rules` for the rubric part)")
    raise UserError(f"nothing to measure for {grader}, no card written: {' and '.join(why)}")


def _battery_failures(
    stage: StageResult | None, outcomes: list[ItemOutcome] | None
) -> tuple[int, str | None]:
    """The battery's failed items and its one failure line (`N of M battery items failed: <cause>; …`)."""
    from collections import Counter

    from livemed.pipeline.runner import StageResult

    total = StageResult()
    if stage is not None:
        total.merge(stage)
    if outcomes:
        failed = [o for o in outcomes if o.call_failed]
        total.merge(
            StageResult(
                processed=len(outcomes), call_failed=len(failed), causes=Counter(o.cause for o in failed)
            )
        )
    return total.call_failed, total.failure_line("battery items")


def _endpoint(app_state: AppState, grader: str) -> str:
    from livemed.models import get_model

    return get_model(grader, config=app_state.config).endpoint


def _print_card(metrics: dict[str, Any]) -> None:
    """Every decisive figure with its n, interval, the best trivial grader's figure and the verdict."""
    from livemed.judges.certification import shown

    table = RichTable(
        title="Validity battery (95% Wilson intervals; a figure passes above the best trivial one)"
    )
    for column in ("part", "figure", "value [95% CI] n", "best trivial", "verdict"):
        table.add_column(column, justify="left")
    for part in ("rubric", "pairs"):
        for name, figure in ((metrics.get(part) or {}).get("figures") or {}).items():
            bar = f"{figure['best_trivial']} {figure['bar']:.2f}" if figure.get("best_trivial") else "–"
            table.add_row(part, name, shown(figure), bar, figure["verdict"])
    console.print(table)
    rubric, pairs = metrics.get("rubric"), metrics.get("pairs")
    if rubric:
        console.print(f"rubric compliance (usable verdicts): {shown(rubric['compliance'])}", markup=False)
    if pairs:
        tertiles = ", ".join(f"{t} {shown(f)}" for t, f in pairs["tertiles"].items())
        console.print(f"pair correctness by tertile: {tertiles or '–'}", markup=False)
        console.print(f"invalid pair samples: {shown(pairs['invalid_samples'])}", markup=False)
        probe = pairs.get("length_probe")
        if probe:
            console.print(
                f"length probe: correctness {shown(probe['plain'])} as they are, "
                f"{shown(probe['padded'])} with the worse response padded",
                markup=False,
            )


def _measure(
    battery: Battery,
    plain: list[JudgeVerdict],
    probe: list[JudgeVerdict],
    outcomes: list[ItemOutcome] | None,
    seed: int,
) -> dict[str, Any]:
    """The card's parts: the grader's figures against the trivial graders' on the same battery."""
    from livemed.judges.battery import pair_trivial, rubric_trivial
    from livemed.judges.certification import pair_part, rubric_part

    pairs = None
    if plain:
        pairs = pair_part(plain, probe, asyncio.run(pair_trivial(battery.pairs)))
    rubric = None
    if outcomes:
        rubric = rubric_part(outcomes, asyncio.run(rubric_trivial(battery, seed)))
    return {"pairs": pairs, "rubric": rubric}


@judges_app.command("certify")
def certify(
    ctx: typer.Context,
    grader: str = typer.Option(
        ...,
        "--grader",
        metavar="MODEL",
        help="Grader model, e.g. openai/gpt-4o, or an offline baseline (offline/lexical, offline/always-a).",
    ),
    mode: str = GRADE_MODE,
    data: Path | None = typer.Option(
        None,
        "--data",
        metavar="DIR",
        help="Folder with pubmedqa/, medcalc_bench/, medqa/ (and medbullets/, pico/ when you have them), "
        "e.g. ../shared/data (default: $LIVEMED_SHARED_DATA; without either, the card has no pair part).",
    ),
    pairs_per_dataset: int | None = typer.Option(
        None,
        "--pairs",
        min=1,
        metavar="N",
        help="Pairs per dataset, e.g. 100 (default: 385 over the datasets, position consistency to ±0.05).",
    ),
    samples: int = typer.Option(
        1, "--samples", min=1, metavar="K", help="Samples per pair, order and rubric item (k)."
    ),
    temperature: float = typer.Option(
        1.0, "--temperature", min=0, max=2, metavar="T", help="Pair judging temperature."
    ),
    cases: int = typer.Option(
        50, "--cases", min=1, metavar="N", help="Cases with a rubric the rubric items are made from."
    ),
    items: int = typer.Option(
        400, "--items", min=8, metavar="N", help="Rubric items at most (whole groups of 8, over the axes)."
    ),
    probes: int = typer.Option(50, "--probes", min=0, metavar="N", help="Pairs in the length probe."),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Seed of pairs and items."),
    grader_template: Path | None = GRADER_TEMPLATE,
    grader_setup: str = GRADER_SETUP,
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write the card as JSON, e.g. card.json."
    ),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
) -> None:
    """Run the validity battery (pairs from every dataset found, stratified, in both orders; a length
    probe; rubric items whose right verdict is known) and store a validity card that says, per figure,
    whether the grader beats the trivial graders: passed, failed or not enough data."""
    from livemed.grade.grader import PROMPT_HASHES as GRADE_HASHES
    from livemed.grade.template import load_template
    from livemed.judges.cards import AGREEMENT_NAMESPACE, card_line
    from livemed.judges.certification import combine
    from livemed.judges.templates import PROMPT_HASHES
    from livemed.records import ValidityCard, short_hash

    app_state = state(ctx)
    store = app_state.store
    options = {"mode": _mode(mode), "samples": samples, "cases": cases, "items": items}
    options |= {"pairs": pairs_per_dataset, "probes": probes, "seed": seed}
    check_setup(grader_setup, grader_template)
    template = None if grader_template is None else load_template(grader_template, grader_setup)
    battery, missing = _make_battery(store, grader, data, options)
    for note in missing:
        console.print(f"[yellow]not in the battery:[/] {note}")
    _something_to_measure(store, grader, battery, missing)
    console.print(battery.plan(samples, mode, grader.startswith("offline/")), markup=False)
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    settings: dict[str, Any] = {"mode": mode, "samples": samples, "temperature": temperature, "seed": seed}
    settings |= {"pairs": len(battery.pairs), "items": len(battery.items)}
    if template is not None:  # the card is that of `<grader>@tpl-<hash>`, the id its grades carry
        settings |= template.run_settings()
    card_grader = grader if template is None else f"{grader}@{template.label}"
    with model_run(
        store, "judges certify", engine, settings={"grader": grader, **settings}, models=[grader]
    ) as run:
        plain, probe, stage = _pair_verdicts(store, engine, app_state, grader, battery, samples, temperature)
        outcomes = _rubric_outcomes(
            app_state, engine, grader, battery, options, grader_template, grader_setup
        )
        failed, run.error = _battery_failures(stage, outcomes)
        run.counts = {"pairs": len(battery.pairs), "items": len(battery.items), "call_failed": failed}
    if run.error:
        print_usage(engine)
        raise CallsFailedError(run.error)
    metrics = _measure(battery, plain, probe, outcomes, seed)
    usage = engine.accounting.by_model.get(grader)
    metrics |= {
        "calls": usage.calls if usage else 0,
        "cost_usd": usage.cost_usd if usage else 0.0,
        "human_agreement": store.state_get(AGREEMENT_NAMESPACE, card_grader),
    }
    endpoint = "offline" if grader.startswith("offline/") else _endpoint(app_state, grader)
    grade_hash = GRADE_HASHES[mode] if template is None else template.hash  # type: ignore[index]
    card = ValidityCard(
        grader=card_grader,
        endpoint=endpoint,
        prompt_hash=short_hash(grade_hash, PROMPT_HASHES["pairwise"]),
        settings=settings,
        metrics=metrics,
        verdict=combine(part["verdict"] if part else None for part in (metrics["pairs"], metrics["rubric"])),
    )
    store.put([card])
    _print_card(metrics)
    console.print(card_line(store, card_grader, mode=mode), markup=False)
    if json_out is not None:
        payload = {"card": card.id, "grader": card_grader, "verdict": card.verdict, "settings": settings}
        write_text(json_out, json.dumps({**payload, "metrics": metrics}, indent=2))
    print_usage(engine)


def _print_comparison(data: dict[str, Any]) -> None:
    from livemed.judges.tables import cell

    c = data["criteria"]
    console.print(
        f"{data['judge_b']} against {data['judge_a']} on {data['answers']} answers: per-criterion macro-F1 "
        f"{cell(c.get('macro_f1'))} · Cohen's kappa {cell(c.get('kappa'))} · "
        f"accuracy {cell(c.get('accuracy'))} "
        f"({c.get('n', 0)} criteria graded by both)",
        markup=False,
    )
    table = RichTable(title="Score shift B − A (paired bootstrap 95% CI) and ranks")
    for column in ("model", "n", "score A", "score B", "shift", "95% CI", "rank A", "rank B"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in data["models"]:
        ci = f"[{cell(row['ci_low'])}, {cell(row['ci_high'])}]"
        moved = "" if row["rank_a"] == row["rank_b"] else " ←"
        table.add_row(
            row["model"],
            str(row["n"]),
            cell(row["score_a"]),
            cell(row["score_b"]),
            cell(row["shift"]),
            ci,
            str(row["rank_a"]),
            f"{row['rank_b']}{moved}",
        )
    console.print(table)


def _no_pair_judges(judges: list[str]) -> None:
    """`compare` regrades rubrics: a pair-judge baseline cannot, say so (not "unknown baseline")."""
    from livemed.judges.baselines import BASELINES

    if pair_judges := [j for j in judges if j in BASELINES]:
        raise UserError(
            f"{', '.join(pair_judges)}: {' and '.join(BASELINES)} are pair judges (for `judges run` and "
            "`judges certify`), not rubric graders; compare rubric graders (a model, or offline/lexical)"
        )


@judges_app.command("compare")
def compare_command(
    ctx: typer.Context,
    judges: list[str] = typer.Option(
        ...,
        "--judge",
        metavar="MODEL",
        help="Two graders, e.g. --judge offline/lexical --judge openai/gpt-4o.",
    ),
    sample: int | None = typer.Option(
        None, "--sample", min=1, metavar="N", help="Regrade a seeded sample of N answers, e.g. 200."
    ),
    mode: str = GRADE_MODE,
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Seed of the sample and the bootstrap."),
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write the numbers as JSON, e.g. compare.json."
    ),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
) -> None:
    """Grade a stored slice with both graders (stored grades, resumable) and report per-criterion
    agreement, each model's score shift and rank changes."""
    from livemed.grade.grader import OfflineGrader
    from livemed.grade.stage import grade_all, plan_targets
    from livemed.judges.compare import compare, sample_targets, target_ids
    from livemed.models import bind_model
    from livemed.pipeline.runs import settle_stages
    from livemed.records import Answer, Grade, GradeFailure

    if len(judges) != 2 or judges[0] == judges[1]:
        raise ConfigError("pass two different graders: --judge A --judge B")
    _no_pair_judges(judges)
    app_state = state(ctx)
    store = app_state.store
    targets = sample_targets(plan_targets(store, store.iter(Answer)).targets, sample, seed)
    if not targets:
        raise UserError("no answers with a rubric in the store: nothing to regrade")
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    settings = {"judges": judges, "sample": sample, "mode": _mode(mode), "seed": seed}
    with model_run(store, "judges compare", engine, settings=settings, models=judges) as run:
        stages = []
        for judge in judges:
            grader = bind_model(judge, engine, "judges", OfflineGrader, config=app_state.config)
            stages.append((judge, asyncio.run(grade_all(store, targets, grader, mode=mode)), "answers"))  # type: ignore[arg-type]
        settle_stages(run, stages)
    ids = [i for t in targets for j in judges for i in target_ids(t, j)]
    grades: dict[str, Grade | GradeFailure] = {
        **store.get_many(GradeFailure, ids),
        **store.get_many(Grade, ids),
    }
    result = compare(
        targets, grades, judges[0], judges[1], seed=seed, resamples=app_state.config.analysis.resamples
    )
    _print_comparison(result.as_dict())
    if json_out is not None:
        write_text(json_out, json.dumps(result.as_dict(), indent=2))
    finish_run(engine, run)
