"""The work behind `livemed taxonomy`: pick each model's lowest-scoring answers, classify, store, tabulate."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from livemed.analysis.collect import pick_judge
from livemed.analysis.inputs import select
from livemed.analysis.taxonomy import (
    HEURISTIC_ID,
    DistributionRow,
    TaxonomyItem,
    criterion_results,
    distribution,
    heuristic_label,
    lowest_answers,
)
from livemed.cli.common import finish_run, make_engine, model_run, progress_for
from livemed.cli.context import AppState, console
from livemed.domains import bundled, load_pack
from livemed.errors import ConfigError, UnknownNameError
from livemed.pipeline.runner import run_stage
from livemed.pipeline.runs import settle, track_run
from livemed.records import Answer, Case, ErrorLabel, Grade, Rubric, Run, Score
from livemed.store import Store


def build_items(store: Store, scores: Sequence[Score], models: Sequence[str], k: int) -> list[TaxonomyItem]:
    """Each model's k lowest-scoring answers with their case, rubric and grades (incomplete ones skipped)."""
    items, skipped = [], 0
    for model in models:
        for score in lowest_answers(scores, model, k):
            case = store.get(Case, score.case_id)
            rubric = store.get(Rubric, f"rubric:{score.case_id}")
            answer = store.get(Answer, score.answer_id)
            if case is None or rubric is None or answer is None:
                skipped += 1
                continue
            grades = [g for g in store.iter(Grade, parent_id=answer.id) if g.judge == score.judge]
            items.append(TaxonomyItem(score, case, rubric, answer, criterion_results(rubric, grades)))
    if skipped:
        console.print(
            f"[yellow]{skipped} answer(s) skipped: their case, rubric or answer is not in the store[/]"
        )
    return items


def check_clinical(app_state: AppState, domain: str | None) -> None:
    """The taxonomy is clinical: refuse (one line, exit 2) when the domain pack (`--domain`, livemed.toml)
    or a bundled pack the store's runs recorded has no `taxonomy` (the legal pack)."""
    pack = app_state.pack(domain)
    packs = {pack.name: pack}
    recorded = {run.settings.get("domain") for run in app_state.existing_store.iter(Run)}
    packs |= {name: load_pack(name) for name in sorted(bundled()) if name in recorded}
    for name, found in packs.items():
        if found.taxonomy != "clinical":
            raise ConfigError(
                f"the error taxonomy (CNIF, GOPR, MHME, KGOC, NCE) is clinical only: the {name} pack "
                "defines none (`taxonomy` in its pack.toml), so its answers are not labelled"
            )


def run_taxonomy(
    app_state: AppState,
    *,
    models: Sequence[str],
    k: int,
    classifier: str,
    judge: str | None,
    convention: str,
    policy: str = "strict",
    no_cache: bool = False,
    cache_read_only: bool = False,
    max_cost: float | None = None,
) -> list[DistributionRow]:
    store = app_state.existing_store
    all_scores = list(store.iter(Score))
    chosen = pick_judge(all_scores, judge, convention, policy)
    scores = select(all_scores, judge=chosen, convention=convention, policy=policy)
    known = sorted({s.model for s in scores})
    models = list(models) or known  # none named: every model with scores
    for model in models:
        if model not in known:
            raise UnknownNameError("model (with scores)", model, known)
    items = build_items(store, scores, models, k)
    settings = {
        "models": list(models),
        "k": k,
        "classifier": classifier,
        "judge": judge,
        "convention": convention,
        "failure_policy": policy,
    }
    if classifier == HEURISTIC_ID:
        with track_run(store, "taxonomy", settings=settings, models=[HEURISTIC_ID]):
            store.put([heuristic_label(item) for item in items])
        classifier_id = HEURISTIC_ID
        console.print(f"[dim]labelled {len(items)} answer(s) with the offline heuristic (a baseline)[/]")
    else:
        classifier_id = _classify_with_llm(
            app_state, items, classifier, settings, no_cache, cache_read_only, max_cost
        )
    wanted = {item.score.answer_id for item in items}
    labels = [
        label
        for label in store.iter(ErrorLabel)
        if label.classifier == classifier_id and label.answer_id in wanted
    ]
    return distribution(labels)


def _classify_with_llm(
    app_state: AppState,
    items: list[TaxonomyItem],
    classifier: str,
    settings: dict[str, object],
    no_cache: bool,
    cache_read_only: bool,
    max_cost: float | None,
) -> str:
    from livemed.analysis.diagnose import STAGE, diagnose
    from livemed.models import LLM, get_model

    store = app_state.store
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    llm = LLM(engine, get_model(classifier, config=app_state.config), stage=STAGE)
    with model_run(
        store,
        "taxonomy",
        engine,
        settings=settings,
        models=[llm.id],
        lease=f"taxonomy:{llm.id}",
        progress=progress_for(engine, llm.id, f"classifying with {llm.id}"),
    ) as run:
        result = asyncio.run(
            run_stage(
                store,
                items,
                lambda item: diagnose(llm, item),
                output_id=lambda item: f"error_label:{item.score.answer_id}:{llm.id}",
                output_kinds=["error_label"],
            )
        )
        settle(run, result, "answers")
    console.print(
        f"[dim]{result.processed} classified, {result.skipped} already labelled, "
        f"{sum(result.rejected.values())} failed (stored as rejections; retried on the next run)[/]"
    )
    finish_run(engine, run)
    return llm.id
