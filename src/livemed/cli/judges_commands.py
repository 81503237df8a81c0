"""`livemed judges build|run|report|validate|certify|compare`: judge validation (docs/judges.md).
(`livemed judges agreement`, against human labels, lives in agreement_command.py.)"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from livemed.cli.common import finish_run, make_engine, model_run, progress_for
from livemed.cli.context import AppState, console, err_console, state
from livemed.cli.stage_commands import CACHE_RO, MAX_COST, NO_CACHE, judges_app, print_result
from livemed.common.atomic import write_text
from livemed.errors import ConfigError, InputFileError, RunError, UserError

if TYPE_CHECKING:
    from livemed.judges.datasets import Item
    from livemed.judges.meta import MetaTables
    from livemed.judges.tables import Table
    from livemed.models import LLM, Engine
    from livemed.records import Pair
    from livemed.store import Store

DATASETS = "pubmedqa|medcalc|medqa|medbullets|pico"
MODE = typer.Option(
    "pairwise", "--mode", metavar="pairwise|pointwise", help="Both slot orders, or 0–10 scores."
)
POLICY = typer.Option(
    "separate",
    "--invalid",
    metavar="separate|half|wrong",
    help="Invalid samples: separate (the paper's), half (RewardBench), wrong (J1).",
)


def judge_llm(app_state: AppState, engine: Engine, judge: str) -> LLM:
    """The judge bound to the engine: an offline baseline (`offline/always-a`, `offline/lexical-overlap`)
    or any configured model."""
    from livemed.judges.baselines import BASELINES
    from livemed.models import LLM, get_model

    if judge.startswith("offline/"):
        if judge not in BASELINES:
            raise UserError(f"{judge} is not a judge baseline (known: {', '.join(BASELINES)})")
        return LLM(engine, BASELINES[judge](), stage="judges")
    return LLM(engine, get_model(judge, config=app_state.config), stage="judges")


def _good(items: Iterable[Item | InputFileError], skipped: list[InputFileError]) -> Iterator[Item]:
    for item in items:
        if isinstance(item, InputFileError):
            skipped.append(item)
            err_console.print(f"[yellow]skipped[/] {escape(str(item))}", highlight=False)
        else:
            yield item


@judges_app.command("build")
def build(
    ctx: typer.Context,
    dataset: str = typer.Option(
        ..., "--dataset", metavar=DATASETS, help="The benchmark to build pairs from."
    ),
    path: Path | None = typer.Option(
        None,
        "--path",
        metavar="PATH",
        help="The dataset's folder (as in ../shared/data) or main file, e.g. ../shared/data/pubmedqa; pico: "
        "default the project-made set.",
    ),
    seed: int = typer.Option(
        0, "--seed", min=0, metavar="N", help="Seed of the mutations and slot order (same seed, same pairs)."
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        metavar="N",
        help="Use at most this many items, e.g. 200: a sample stratified by calculator/group (--seed).",
    ),
    tertiles: str = typer.Option(
        "count",
        "--tertiles",
        metavar="count|width",
        help="Rank-gap tertiles: count (equal-count thirds per item, the paper's) or width (equal bins).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        metavar="FILE",
        help="Also export the pairs as JSONL with a data card, e.g. pairs-medcalc.jsonl.",
    ),
) -> None:
    """Build metric-grounded preference pairs from a benchmark and store them (judge_pair records)."""
    from livemed.judges.datasets import dataset as find_dataset
    from livemed.judges.datasets import licence_of
    from livemed.judges.pairs import TERTILE_RULES, DataCard, build_pairs, card_path, export_pairs
    from livemed.pipeline.runs import track_run

    info = find_dataset(dataset)
    if tertiles not in TERTILE_RULES:
        raise ConfigError(f"--tertiles must be count or width, got {tertiles!r}")
    app_state = state(ctx)
    skipped: list[InputFileError] = []
    stats: Counter[str] = Counter()
    licence = licence_of(dataset, path)
    settings = {
        "dataset": dataset,
        "path": str(path) if path else None,
        "seed": seed,
        "limit": limit,
        "tertiles": tertiles,
    }
    with track_run(app_state.store, "judges build", settings=settings) as run:
        items = _sampled(_good(info.load(path), skipped), limit, seed)
        pairs = build_pairs(items, seed, licence, stats, tertiles)
        card = DataCard()

        def counted(stream: Iterable[Pair]) -> Iterator[Pair]:
            for pair in stream:
                card.add(pair)
                yield pair

        if out is not None:
            card = export_pairs(_stored(app_state.store, pairs), out)
        else:
            app_state.store.put(counted(pairs))
        run.counts = {**dict(stats), "skipped": len(skipped)}
    console.print(
        f"{dataset}: {stats['items']} items, {stats['candidates']} candidates, {stats['pairs']} pairs "
        f"(seed {seed}; gold slot A {card.gold['A']} / B {card.gold['B']}); licence: {licence}"
    )
    if out is not None:
        console.print(f"wrote {out} and {card_path(out)}")
    if skipped:
        raise RunError(f"{len(skipped)} item(s) could not be read and were skipped (listed above)")


def _sampled(items: Iterable[Item], limit: int | None, seed: int) -> Iterable[Item]:
    """All items (streamed), or `limit` of them stratified by calculator/group, seeded."""
    from livemed.judges.datasets import item_group
    from livemed.judges.sampling import stratified_sample

    if limit is None:
        return items
    return stratified_sample(items, limit, f"{seed}:items", key=item_group, ident=lambda i: i.item_id)


def _stored(store: Store, pairs: Iterable[Pair]) -> Iterator[Pair]:
    """The pairs, each also written to the store (in batches) as the export reads them."""
    batch: list[Pair] = []
    for pair in pairs:
        batch.append(pair)
        if len(batch) >= 500:
            store.put(batch)
            batch = []
        yield pair
    store.put(batch)


def select_pairs(store: Store, datasets: list[str], limit: int | None, seed: int = 0) -> Iterator[Pair]:
    """Stored pairs of the given datasets (all when none); with `limit`, that many per dataset in a
    sample stratified by group and tertile, seeded (`judges/sampling.py`)."""
    from livemed.judges.sampling import read_pairs, stored_sample
    from livemed.records import Pair

    if limit is not None:
        yield from read_pairs(store, stored_sample(store, datasets, limit, seed))
        return
    for pair in store.iter(Pair):
        if not datasets or pair.dataset in datasets:
            yield pair


def count_pairs(store: Store, datasets: list[str], limit: int | None) -> int:
    """How many pairs `select_pairs` yields, from their ids alone (`pair:<dataset>:…`)."""
    per: Counter[str] = Counter(i.split(":", 2)[1] for i in store.ids("judge_pair"))
    return sum(min(n, limit) if limit else n for d, n in per.items() if not datasets or d in datasets)


@judges_app.command("run")
def run_judge(
    ctx: typer.Context,
    judge: str = typer.Option(
        ...,
        "--judge",
        metavar="MODEL",
        help="Judge model, e.g. vllm/my-judge, or offline/always-a | offline/lexical-overlap.",
    ),
    samples: int = typer.Option(
        1, "--samples", min=1, metavar="K", help="Samples per pair and slot order (k)."
    ),
    mode: str = MODE,
    temperature: float = typer.Option(
        1.0, "--temperature", min=0, max=2, metavar="T", help="Sampling temperature."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1, metavar="N", help="Completion token limit, e.g. 2048."
    ),
    datasets: list[str] = typer.Option(
        [],
        "--dataset",
        metavar=DATASETS,
        help="Only pairs of this dataset; repeat for several, e.g. --dataset medcalc.",
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        metavar="N",
        help="At most this many pairs per dataset, e.g. 200: a sample stratified by group and tertile.",
    ),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Seed of the --limit sample."),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
) -> None:
    """Ask a judge about the stored pairs: k samples per pair and order, one judge_verdict each."""
    from livemed.answer.stage import in_flight
    from livemed.judges.datasets import dataset
    from livemed.judges.run import JudgeRun, clear_retried, judge_pairs
    from livemed.pipeline.runs import settle

    if mode not in ("pairwise", "pointwise"):
        raise ConfigError(f"--mode must be pairwise or pointwise, got {mode!r}")
    for name in datasets:
        dataset(name)  # an unknown name is one line listing the known ones (exit 2)
    app_state = state(ctx)
    store = app_state.store
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    llm = judge_llm(app_state, engine, judge)
    total = count_pairs(store, datasets, limit)
    pairs = select_pairs(store, datasets, limit, seed)  # streamed: a large build is never held in memory
    if not total:
        raise UserError(
            "no pairs stored"
            + (f" for {', '.join(datasets)}" if datasets else "")
            + ": run `livemed judges build --dataset pico` (or another --dataset) first"
        )
    spec = JudgeRun(llm, mode=mode, temperature=temperature, max_tokens=max_tokens)  # type: ignore[arg-type]
    orders = 2 if mode == "pairwise" else 1
    settings = {
        "judge": judge,
        "mode": mode,
        "samples": samples,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "pairs": total,
        "sample": {"limit": limit, "seed": seed} if limit is not None else None,
    }
    with model_run(
        store,
        "judges run",
        engine,
        settings=settings,
        models=[judge],
        lease=f"judges:{judge}",
        progress=progress_for(engine, judge, f"judging with {judge}", total=total * orders * samples),
    ) as run:
        result = asyncio.run(judge_pairs(store, pairs, spec, samples=samples, window=in_flight(llm)))
        settle(run, result, "samples")
    clear_retried(store)
    print_result(f"verdicts by {judge} ({mode}, k={samples})", result)
    finish_run(engine, run)


def load_results(store: Store, judge: str | None, mode: str | None, policy: str) -> dict[str, MetaTables]:
    """Meta-evaluation tables per stored judge configuration (`judge · mode`), failed calls counted."""
    from livemed.judges.results import load_results as load

    return load(store, judge, mode, policy)


def print_tables(tables: list[Table]) -> None:
    from livemed.judges.tables import TEXT_COLUMNS, cell

    for table in tables:
        shown = RichTable(title=table.title)
        for column in table.columns:
            text = column in TEXT_COLUMNS
            shown.add_column(column, justify="left" if text else "right", no_wrap=column == "judge")
        for row in table.rows:
            shown.add_row(*(cell(row.get(c)) for c in table.columns))
        console.print(shown)


@judges_app.command("report")
def report(
    ctx: typer.Context,
    judge: str | None = typer.Option(
        None, "--judge", metavar="MODEL", help="Only this judge, e.g. offline/always-a."
    ),
    mode: str | None = typer.Option(
        None, "--mode", metavar="pairwise|pointwise", help="Only runs of this mode (default: both)."
    ),
    policy: str = POLICY,
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write every number as JSON, e.g. judges.json."
    ),
) -> None:
    """Correctness, verdict variance, invalid share, tertiles and position bias of the stored judge runs,
    each figure with its n and 95% interval, and the games asked, answered, invalid and missing."""
    from livemed.judges.meta import POLICIES
    from livemed.judges.tables import all_tables, missing_line

    if policy not in POLICIES:
        raise ConfigError(f"--invalid must be one of {', '.join(POLICIES)}, got {policy!r}")
    results = load_results(state(ctx).existing_store, judge, mode, policy)
    if not results:
        raise UserError(
            "no judge verdicts stored: run `livemed judges run --judge offline/always-a` (or your judge) "
            "first"
        )
    missing = missing_line(results)
    if missing is not None:
        console.print(f"[yellow]{escape(missing)}[/]", highlight=False)
    console.print(
        f"invalid-output policy: {policy} · 95% intervals (Wilson, or bootstrap over items) · "
        f"anchor: the paper's SFT→RL 8B judge, 0.81 average; 0.69 / 0.83 / 0.90 by tertile"
    )
    print_tables(all_tables(results))
    if json_out is not None:
        payload: dict[str, Any] = {
            "missing": missing,
            "judges": {label: t.figures_dict() for label, t in results.items()},
        }
        write_text(json_out, json.dumps(payload, indent=2))
        console.print(f"wrote {json_out}")
