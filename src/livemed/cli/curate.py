"""`livemed curate`: harvested documents → cases, with a funnel per source and stage."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from livemed.cli.context import DOMAIN, AppState, console, err_console, state
from livemed.cli.executors import HELP as EXECUTOR_HELP
from livemed.cli.executors import run_elsewhere
from livemed.cli.root import app

if TYPE_CHECKING:
    from livemed.curate.chain import Chain, Funnel
    from livemed.domains import DomainPack
    from livemed.models import Engine
    from livemed.store import Store

BASELINE = "offline/curate-baseline"


@app.command()
def curate(
    ctx: typer.Context,
    model: str = typer.Option(
        BASELINE,
        "--model",
        "-m",
        metavar="MODEL",
        help="Curation model, provider/name, e.g. vllm/Qwen/Qwen2.5-72B-Instruct (default: the rule-based "
        "baseline).",
    ),
    limit: int | None = typer.Option(
        None, "--limit", "-n", min=1, metavar="N", help="Curate at most N new documents, e.g. 50."
    ),
    evidence: str | None = typer.Option(
        None,
        "--evidence",
        metavar="FILE|NAME",
        help="Evidence corpus: JSONL (id, title, text, url, licence), MedQuAD, or a name: `medquad` "
        "(fetched), `demo` (bundled); e.g. passages.jsonl.",
    ),
    retriever: str | None = typer.Option(
        None, "--retriever", metavar="bm25|europepmc|dense|none", help="Evidence retriever (default: config)."
    ),
    index_dir: Path | None = typer.Option(
        None, "--index-dir", metavar="DIR", help="Where BM25 indexes are kept, e.g. .livemed-index."
    ),
    llm_audit: bool | None = typer.Option(
        None, "--llm-audit/--no-llm-audit", help="Let the model audit paraphrases (default: config)."
    ),
    batch_size: int = typer.Option(16, "--batch-size", min=1, metavar="N", help="Documents per transaction."),
    redo: bool = typer.Option(
        False,
        "--redo",
        help="Curate again documents already curated, replacing their outcome; a changed or rejected case "
        "loses its rubric, answers and grades (the next rubrics/answer/grade rebuild them).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the response cache."),
    cache_read_only: bool = typer.Option(False, "--cache-read-only", help="Only replay cached responses."),
    max_cost: float | None = typer.Option(
        None, "--max-cost", min=0, metavar="USD", help="Stop before spending more US dollars, e.g. 5."
    ),
    executor: str | None = typer.Option(None, "--executor", metavar="inprocess|ray", help=EXECUTOR_HELP),
    domain: str | None = DOMAIN,
) -> None:
    """Run the Screener → Validator → Controller chain on stored documents; write cases and rejections."""
    from livemed.cli.common import finish_run, make_engine, model_run, progress_for
    from livemed.pipeline.runs import settle

    if run_elsewhere(ctx, executor):
        return

    app_state = state(ctx)
    settings = app_state.config.curate
    kind = retriever or settings.retriever
    if kind not in ("bm25", "europepmc", "dense", "none"):
        from livemed.errors import UnknownNameError

        raise UnknownNameError("retriever", kind, ("bm25", "europepmc", "dense", "none"))
    offline = model.startswith("offline/")  # rules are cheap: never replay stale cached baseline answers
    engine = make_engine(
        app_state, no_cache=no_cache or offline, cache_read_only=cache_read_only, max_cost=max_cost
    )
    pack = app_state.pack(domain)
    evidence = evidence or settings.evidence or pack.evidence_corpus()
    chain = _chain(app_state, engine, model, kind, evidence, index_dir, llm_audit, pack)
    if offline:
        console.print(f"[dim]curating with {model}: a rule-based baseline, not an LLM[/]")
    store = app_state.store
    run_settings = {
        "limit": limit,
        "redo": redo,
        "retriever": kind,
        "evidence": evidence,
        "domain": pack.name,
    }
    with model_run(
        store,
        "curate",
        engine,
        settings=run_settings,
        models=[model],
        lease=f"curate:{model}",
        progress=progress_for(
            engine, model, f"curating with {model}", total=_pending(store, limit, redo) if offline else None
        ),
    ) as run:
        from livemed.curate.chain import curate_store

        result, funnel = asyncio.run(
            curate_store(store, chain, limit=limit, batch_size=batch_size, redo=redo)
        )
        settle(run, result, "documents")
    _print_funnel(funnel)
    accepted = result.written.get("case", 0)
    console.print(f"{result.processed} document(s) curated: {accepted} case(s) accepted")
    errors = getattr(chain.retriever, "errors", [])
    if errors:
        err_console.print(f"[yellow]warning:[/] {len(errors)} evidence search(es) failed: {errors[0]}")
    finish_run(engine, run)


def _pending(store: Store, limit: int | None, redo: bool) -> int:
    """How many documents this run curates (the total of a rule-based baseline's progress bar)."""
    from livemed.curate.chain import pending_docs

    return sum(1 for _ in pending_docs(store, limit=limit, redo=redo))


def _chain(
    app_state: AppState,
    engine: Engine,
    model_id: str,
    kind: str,
    evidence: str | None,
    index_dir: Path | None,
    llm_audit: bool | None,
    pack: DomainPack,
) -> Chain:
    from livemed.curate.chain import Chain
    from livemed.curate.controller import Controller
    from livemed.curate.screener import Screener
    from livemed.curate.validator import Validator
    from livemed.evidence.factory import build_retriever, default_index_dir
    from livemed.models import LLM, get_model
    from livemed.sources import source_settings

    config = app_state.config
    settings = config.curate
    model = get_model(model_id, config=config, pack=pack)
    audit = settings.llm_audit if llm_audit is None else llm_audit
    audit_llm = (
        LLM(engine, model, stage="controller") if audit and not model_id.startswith("offline/") else None
    )
    retriever = build_retriever(
        kind,
        evidence=evidence,
        evidence_format=settings.evidence_format,
        index_dir=index_dir or default_index_dir(settings.index_dir),
        dense_model=settings.dense_model,
        europepmc=source_settings("europepmc", config),  # type: ignore[arg-type]
    )
    return Chain(
        screener=Screener(
            LLM(engine, model, stage="screener"),
            pack,
            view=settings.candidate_view,
            views=settings.candidate_view_by_source,
        ),
        validator=Validator(
            LLM(engine, model, stage="validator"),
            checklists=settings.checklists,
            k=settings.evidence_k,
            pack=pack,
        ),
        controller=Controller(audit_llm, min_score=settings.grounding_min_score, pack=pack),
        retriever=retriever,
        thresholds=config.thresholds,
    )


def _print_funnel(funnel: Funnel) -> None:
    from rich.table import Table

    if not funnel.counts:
        console.print("nothing new to curate")
        return
    table = Table(title="curation funnel (this run)")
    for column in ("source", "stage", "in", "rejected", "out"):
        table.add_column(column, justify="right" if column in ("in", "out") else "left")
    for source, stage, count in funnel.rows():
        reasons = ", ".join(f"{reason} {n}" for reason, n in count.rejected.most_common()) or "-"
        table.add_row(source, stage, str(count.taken), reasons, str(count.passed))
    console.print(table)
