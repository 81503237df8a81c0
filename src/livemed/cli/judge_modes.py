"""`livemed judges modes`: batched against per-criterion grading for one judge (`judges.modes`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer

from livemed.cli.common import make_engine, model_run, print_usage
from livemed.cli.context import console, state
from livemed.cli.stage_commands import CACHE_RO, MAX_COST, NO_CACHE, judges_app
from livemed.common.atomic import write_text
from livemed.errors import CallsFailedError, UserError


@judges_app.command("modes")
def modes(
    ctx: typer.Context,
    judge: str = typer.Option(
        ...,
        "--judge",
        metavar="MODEL",
        help="Grader model to measure, e.g. openai/gpt-4o (or offline/lexical).",
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", metavar="MODEL", help="Only this candidate's answers, e.g. offline/empty."
    ),
    limit: int = typer.Option(
        50, "--limit", min=1, metavar="N", help="Grade at most this many answers both ways."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write the comparison as JSON, e.g. modes.json."
    ),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
) -> None:
    """Grade stored answers per criterion (the reference) and batched; print their agreement and each
    mode's failure rate. Nothing is stored but the calls (response cache) and the Run."""
    from livemed.grade.grader import OfflineGrader
    from livemed.grade.stage import plan_targets
    from livemed.judges.modes import compare_modes
    from livemed.models import bind_model
    from livemed.records import Answer

    app_state = state(ctx)
    store = app_state.store
    answers = [a for a in store.iter(Answer) if model is None or a.model == model][:limit]
    targets = plan_targets(store, answers).targets
    if not targets:
        raise UserError(
            "no answers with a case and a rubric to grade: write rubrics and answers first "
            "(e.g. `livemed rubrics --writer offline/rules` and `livemed answer --model offline/reference`)"
        )
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    grader = bind_model(judge, engine, "judges", OfflineGrader, config=app_state.config)
    settings = {"judge": judge, "candidate": model, "limit": limit}
    with model_run(store, "judges modes", engine, settings=settings, models=[judge]) as run:
        result = asyncio.run(compare_modes(targets, grader))
        run.counts = {
            "answers": result.answers,
            "criteria": result.criteria,
            "call_failed": result.calls_failed,
        }
    _print(result.as_dict())
    if json_out is not None:
        write_text(json_out, json.dumps(result.as_dict(), indent=2))
        console.print(f"wrote {json_out}", markup=False)
    print_usage(engine)
    if result.calls_failed:
        raise CallsFailedError(
            f"{result.calls_failed} of {2 * result.criteria} verdicts failed their call; "
            "run again to retry them"
        )


def _print(data: dict[str, object]) -> None:
    agreement = data["agreement"]
    lines = [
        f"judge {data['judge']}: {data['answers']} answers, {data['criteria']} criteria, "
        f"{data['compared']} with a verdict in both modes",
    ]
    if isinstance(agreement, dict):
        kappa = agreement["cohen_kappa"]
        lines.append(
            f"batched vs per-criterion (reference): agreement {agreement['accuracy']:.3f}, "
            f"Cohen's kappa {'—' if kappa is None else f'{kappa:.3f}'}, "
            f"met only batched {data['batched_only_met']}, "
            f"met only per criterion {data['per_criterion_only_met']}"
        )
    rates = data["failure_rates"]
    failures = data["failures"]
    assert isinstance(rates, dict)
    assert isinstance(failures, dict)
    for mode in ("per-criterion", "batched"):
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(failures[mode].items())) or "none"
        lines.append(f"{mode} failures: {rates[mode]:.1%} of criteria ({reasons})")
    for line in lines:
        console.print(line, markup=False)
