"""`livemed judges agreement`: a grader's verdicts against human labels: its stored verdicts on its
audit sample against the reviewers' stored labels (no `--labels`; no model call), or its verdicts on the
items of a label file (`--labels FILE`; it grades them)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.context import console, err_console, state
from livemed.cli.stage_commands import (
    GRADER_SETUP,
    GRADER_TEMPLATE,
    check_setup,
    grader_for,
    judges_app,
)
from livemed.common.atomic import write_text
from livemed.errors import CallsFailedError, UserError


@judges_app.command("agreement")
def agreement(
    ctx: typer.Context,
    labels: Path | None = typer.Option(
        None,
        "--labels",
        metavar="FILE",
        help="JSONL/CSV (response, criterion, label) or K-QA NLI CSV, e.g. labels.csv, to grade; "
        "without it, the grader's stored verdicts against the reviewers' stored labels.",
    ),
    grader: str = typer.Option(
        ...,
        "--grader",
        metavar="MODEL",
        help="Grader model, e.g. openai/gpt-4o, or offline/lexical (without --labels: the judge id its "
        "grades carry).",
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, metavar="N", help="Use at most this many labelled items, e.g. 200."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write the metrics as JSON, e.g. agreement.json."
    ),
    grader_template: Path | None = GRADER_TEMPLATE,
    grader_setup: str = GRADER_SETUP,
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    cache_read_only: bool = typer.Option(False, "--cache-read-only", help="Only use cached responses."),
    max_cost: float | None = typer.Option(
        None, "--max-cost", min=0, metavar="USD", help="Spending limit in US dollars, e.g. 5."
    ),
) -> None:
    """The grader against human labels: macro-F1, Cohen's kappa, accuracy and per-class precision/recall.
    Without --labels, its stored verdicts on its audit sample against the reviewers' labels (per axis,
    with intervals, beside reviewer-vs-reviewer agreement and trivial graders); with --labels, it grades
    the file's items."""
    if labels is None:
        if grader_template is not None or limit is not None:
            raise UserError(
                "--grader-template and --limit grade a label file: give --labels FILE, or leave them out "
                "to compare the stored verdicts of --grader (e.g. model@tpl-<hash>) with the reviewers'"
            )
        _stored(ctx, grader, json_out)
        return
    from livemed.cli.common import make_engine, model_run, print_usage
    from livemed.errors import InputFileError
    from livemed.grade.grader import OfflineGrader
    from livemed.interop.labels import LabelItem, read_labels
    from livemed.judges.agreement import grade_items, metrics
    from livemed.judges.cards import AGREEMENT_NAMESPACE
    from livemed.models import bind_model

    app_state = state(ctx)
    items: list[LabelItem] = []
    skipped = 0
    for item in read_labels(labels):
        if isinstance(item, InputFileError):
            skipped += 1
            err_console.print(f"[yellow]skipped[/] {escape(str(item))}", highlight=False)
        elif limit is None or len(items) < limit:
            items.append(item)
    if not items:
        raise UserError(f"{labels}: no usable labelled items")
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    check_setup(grader_setup, grader_template)
    judge = (
        bind_model(grader, engine, "judges", OfflineGrader, config=app_state.config)
        if grader_template is None
        else grader_for(app_state, engine, grader, "per-criterion", grader_template, grader_setup)
    )
    with model_run(
        app_state.store,
        "judges agreement",
        engine,
        settings={"labels": str(labels), "grader": judge.id},
        models=[grader],
    ) as run:
        predicted, reasons = asyncio.run(grade_items(items, judge))
        run.counts = {"items": len(items), "call_failed": reasons.get("call_failed", 0), "skipped": skipped}
    graded = [(i.label, p) for i, p in zip(items, predicted, strict=True) if p is not None]
    if not graded:
        print_usage(engine)
        raise CallsFailedError(f"{len(items)} of {len(items)} items failed: no verdict to measure")
    result = metrics([h for h, _ in graded], [p for _, p in graded], failures=sum(reasons.values()))
    app_state.store.state_set(AGREEMENT_NAMESPACE, judge.id, result.as_dict())  # shown on validity cards
    _print_agreement(judge.id, labels, result.as_dict() | {"failure_reasons": reasons})
    if json_out is not None:
        write_text(json_out, json.dumps(result.as_dict() | {"failure_reasons": reasons}, indent=2))
    print_usage(engine)
    _fail_for_agreement(len(items), reasons.get("call_failed", 0), skipped)


def _fail_for_agreement(total: int, failed: int, skipped: int) -> None:
    """Exit 1 when items were left out: failed grader calls (not in the metrics) or unreadable lines."""
    from livemed.errors import RunError

    if failed:
        raise CallsFailedError(
            f"{failed} of {total} items failed (grader calls; left out of the metrics above); "
            "run again to retry them"
        )
    if skipped:
        raise RunError(
            f"{skipped} label line(s) could not be read and were skipped (listed above); "
            "the metrics use the rest"
        )


def _print_agreement(grader: str, labels: Path, data: dict[str, Any]) -> None:
    kappa = "undefined (one class only)" if data["cohen_kappa"] is None else f"{data['cohen_kappa']:.3f}"
    console.print(f"grader {grader} vs human labels in {labels} ({data['n']} items)")
    console.print(
        f"macro-F1 {data['macro_f1']:.3f} · Cohen's kappa {kappa} · accuracy {data['accuracy']:.3f}"
    )
    table = Table()
    for column in ("class", "precision", "recall", "F1", "support"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for name, stats in data["per_class"].items():
        table.add_row(
            name,
            f"{stats['precision']:.3f}",
            f"{stats['recall']:.3f}",
            f"{stats['f1']:.3f}",
            str(stats["support"]),
        )
    console.print(table)
    if data["grader_failures"]:
        console.print(
            f"grader failures counted as not met: {data['grader_failures']} {data['failure_reasons']}"
        )


def _stored(ctx: typer.Context, grader: str, json_out: Path | None) -> None:
    """The grader's stored verdicts against the reviewers' stored labels: printed, stored for its
    validity card, and written to --json."""
    from livemed.judges.cards import AGREEMENT_NAMESPACE
    from livemed.judges.reviewed import reviewed_agreement

    store = state(ctx).existing_store
    data = reviewed_agreement(store, grader)
    store.state_set(AGREEMENT_NAMESPACE, grader, data)  # shown on validity cards and the report
    _print_reviewed(data)
    if json_out is not None:
        write_text(json_out, json.dumps(data, indent=2))


def _print_reviewed(data: dict[str, Any]) -> None:
    from livemed.judges.certification import shown
    from livemed.judges.reviewed import agreement_rows, notes

    grader = data["grader"]
    console.print(
        f"grader {data['judge']} vs the reviewers' labels on its audit sample: {grader['n']} of "
        f"{data['sampled']} items labelled ({grader['labels']} labels), {data['weighting']}",
        markup=False,
    )
    table = Table(title="Agreement with the reviewers (95% stratified bootstrap intervals)")
    for column in ("comparison", "accuracy", "macro-F1", "Cohen's kappa"):
        table.add_column(column, justify="left" if column == "comparison" else "right")
    for name, figures, trivial in agreement_rows(data):
        cells = (shown(figures.get(key)) for key in ("accuracy", "macro_f1", "cohen_kappa"))
        table.add_row(f"  {name}" if trivial else name, *cells)
    console.print(table)
    for cls, parts in grader["per_class"].items():
        console.print(
            f"{cls}: precision {shown(parts['precision'])} · recall {shown(parts['recall'])}", markup=False
        )
    for line in notes(data):
        console.print(line, markup=False)
