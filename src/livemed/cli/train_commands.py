"""`livemed judges train`: SFT, GRPO or SFT→GRPO judge training with TRL (needs `livemed[train]`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from livemed.cli.common import engine_progress, finish_run, make_engine, model_run
from livemed.cli.context import AppState, console, err_console, state
from livemed.cli.stage_commands import CACHE_RO, MAX_COST, NO_CACHE, judges_app
from livemed.common.atomic import write_text
from livemed.errors import ConfigError, UserError

if TYPE_CHECKING:
    from livemed.training.exports import DataFile, Distilled
    from livemed.training.train import TrainSettings

REGIME = typer.Option(..., "--regime", metavar="sft|grpo|sft+grpo", help="What to train.")


@judges_app.command("train")
def train(
    ctx: typer.Context,
    regime: str = REGIME,
    base: str = typer.Option(
        ...,
        "--base",
        metavar="CHECKPOINT",
        help="Base checkpoint: a local folder or a hub id in the HF cache, e.g. Qwen/Qwen2.5-0.5B-Instruct.",
    ),
    pairs: Path = typer.Option(
        ...,
        "--pairs",
        metavar="FILE",
        help="Preference pairs JSONL (`livemed judges build --out`), e.g. pairs.jsonl.",
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        metavar="DIR",
        help="Folder for the training sets, checkpoints and cards, e.g. runs/sft.",
    ),
    heldout: float = typer.Option(
        0.2,
        "--heldout",
        min=0.0,
        max=0.95,
        metavar="SHARE",
        help="Share of benchmark items kept out of training (for evaluation).",
    ),
    teacher: str | None = typer.Option(
        None, "--teacher", metavar="MODEL", help="Teacher judge for SFT, e.g. vllm/Qwen/Qwen2.5-72B-Instruct."
    ),
    samples: int = typer.Option(
        3, "--samples", min=1, metavar="Q", help="Q: teacher samples per order; all must be right."
    ),
    teacher_temperature: float = typer.Option(
        1.0, "--teacher-temperature", min=0.0, max=2.0, metavar="T", help="The teacher's temperature."
    ),
    teacher_max_tokens: int = typer.Option(
        1024, "--teacher-max-tokens", min=1, metavar="N", help="The teacher's token limit."
    ),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Seed of the split and the trainers."),
    lora_r: int = typer.Option(
        0, "--lora-r", min=0, metavar="N", help="LoRA rank (peft), e.g. 16; 0 = full fine-tuning."
    ),
    lora_alpha: int = typer.Option(32, "--lora-alpha", min=1, metavar="N", help="LoRA alpha."),
    batch_size: int = typer.Option(
        8, "--batch-size", min=1, metavar="N", help="Per device (GRPO: completions)."
    ),
    gradient_accumulation: int = typer.Option(
        1, "--gradient-accumulation", min=1, metavar="N", help="Steps per optimizer update."
    ),
    sft_epochs: float = typer.Option(1.0, "--sft-epochs", metavar="EPOCHS", help="SFT epochs."),
    sft_max_steps: int = typer.Option(
        -1, "--sft-max-steps", metavar="N", help="SFT steps; -1 = run the epochs."
    ),
    sft_learning_rate: float = typer.Option(
        2e-5, "--sft-learning-rate", metavar="RATE", help="SFT learning rate."
    ),
    max_length: int = typer.Option(
        2048, "--max-length", metavar="N", help="SFT: prompt + completion tokens."
    ),
    grpo_epochs: float = typer.Option(1.0, "--grpo-epochs", metavar="EPOCHS", help="GRPO epochs."),
    grpo_max_steps: int = typer.Option(
        -1, "--grpo-max-steps", metavar="N", help="GRPO steps; -1 = run the epochs."
    ),
    grpo_learning_rate: float = typer.Option(
        1e-6, "--grpo-learning-rate", metavar="RATE", help="GRPO learning rate."
    ),
    num_generations: int = typer.Option(
        4, "--num-generations", metavar="N", help="GRPO rollouts per prompt."
    ),
    max_completion_length: int = typer.Option(
        1024, "--max-completion-length", metavar="N", help="GRPO: completion tokens per rollout."
    ),
    temperature: float = typer.Option(1.0, "--temperature", metavar="T", help="GRPO rollout temperature."),
    beta: float = typer.Option(0.0, "--beta", metavar="BETA", help="GRPO KL coefficient (J1: 0.01 for 8B)."),
    reward: str = typer.Option(
        "correctness",
        "--reward",
        metavar="correctness|consistency",
        help="GRPO reward: correct, or correct in both orders.",
    ),
    logging_steps: int = typer.Option(10, "--logging-steps", min=1, metavar="N", help="Log every N steps."),
    gradient_checkpointing: bool = typer.Option(
        False, "--gradient-checkpointing", help="Recompute activations to save memory."
    ),
    no_cache: bool = NO_CACHE,
    cache_read_only: bool = CACHE_RO,
    max_cost: float | None = MAX_COST,
) -> None:
    """Train a judge on preference pairs: export TRL sets, distil a teacher (SFT), train, write cards.

    Needs the training extra: pip install 'livemed\\[train]' (torch, transformers, TRL, peft)."""
    from livemed.training.train import check_settings, ensure_extra

    options = dict(locals())
    settings = _settings(options)
    check_settings(settings)
    stages = settings.regime.split("+")
    if "sft" in stages and teacher is None:
        raise ConfigError(f"--regime {settings.regime} distils a teacher: give --teacher provider/model")
    ensure_extra()
    app_state = state(ctx)
    everything, bad = _read_pairs(pairs)
    data = out / "data"
    loaded, facts = _split(everything, heldout, seed, data / "heldout-pairs.jsonl")
    sets: dict[str, DataFile] = {}
    extra: dict[str, Any] = {"pairs": {**_pairs_facts(pairs, len(everything), bad), **facts}}
    if "grpo" in stages:
        sets["grpo"] = _grpo_set(loaded, seed, data / "grpo.jsonl")
    if "sft" in stages:
        assert teacher is not None
        sets["sft"], extra["teacher"] = _sft_set(
            app_state,
            loaded,
            teacher,
            samples,
            teacher_temperature,
            teacher_max_tokens,
            seed,
            data / "sft.jsonl",
            (no_cache, cache_read_only, max_cost),
        )
    _train(settings, out, sets, extra)
    if bad:
        err_console.print(f"{pairs}: {bad} bad line(s) were skipped (listed above); trained on the rest")
        raise typer.Exit(code=1)


def _settings(options: dict[str, Any]) -> TrainSettings:
    from pydantic import ValidationError

    from livemed.config import describe_validation_error
    from livemed.training.train import TrainSettings

    fields = {k: v for k, v in options.items() if k in TrainSettings.model_fields}
    try:
        return TrainSettings(**fields)
    except ValidationError as exc:
        raise ConfigError(f"judges train: {describe_validation_error(exc)}") from None


def _read_pairs(path: Path) -> tuple[list[Any], int]:
    from livemed.errors import InputFileError
    from livemed.training.judging import read_pairs

    pairs: list[Any] = []
    bad = 0
    for item in read_pairs(path):
        if isinstance(item, InputFileError):
            err_console.print(f"[yellow]skipped[/] {escape(str(item))}", highlight=False)
            bad += 1
        else:
            pairs.append(item)
    if not pairs:
        raise UserError(f"{path}: no preference pairs to train on")
    console.print(f"{path}: {len(pairs)} pair(s)" + (f", {bad} bad line(s) skipped" if bad else ""))
    return pairs, bad


def _pairs_facts(path: Path, count: int, bad: int) -> dict[str, Any]:
    from livemed.training.exports import file_sha256

    return {"path": str(path), "sha256": file_sha256(path), "pairs": count, "bad_lines": bad}


def _split(pairs: list[Any], fraction: float, seed: int, path: Path) -> tuple[list[Any], dict[str, Any]]:
    from livemed.jsonl import write_jsonl
    from livemed.training.exports import file_sha256
    from livemed.training.judging import split_heldout

    train, held = split_heldout(pairs, fraction, seed)
    if not train:
        raise UserError(f"--heldout {fraction:g} left no pairs to train on")
    write_jsonl(held, path)
    console.print(f"held out {len(held)} pair(s) of {len(pairs)} (whole items, for evaluation) → {path}")
    return train, {
        "heldout": {"fraction": fraction, "pairs": len(held), "path": str(path), "sha256": file_sha256(path)},
        "trained_on": len(train),
    }


def _grpo_set(pairs: list[Any], seed: int, path: Path) -> DataFile:
    from livemed.training.exports import grpo_rows, write_rows
    from livemed.training.judging import render

    written = write_rows(grpo_rows(pairs, render, seed=seed), path)
    console.print(f"GRPO set: {written.rows} prompts (both orders of {len(pairs)} pairs) → {path}")
    return written


def _sft_set(
    app_state: AppState,
    pairs: list[Any],
    teacher: str,
    samples: int,
    temperature: float,
    max_tokens: int,
    seed: int,
    path: Path,
    cache: tuple[bool, bool, float | None],
) -> tuple[DataFile, dict[str, Any]]:
    from livemed.models import LLM, Settings, get_model
    from livemed.training.exports import write_rows
    from livemed.training.judging import PROMPT_HASH, parse, render

    no_cache, cache_read_only, max_cost = cache
    engine = make_engine(app_state, no_cache=no_cache, cache_read_only=cache_read_only, max_cost=max_cost)
    llm = LLM(engine, get_model(teacher, config=app_state.config), stage="judges-train")
    settings = Settings(temperature=temperature, max_tokens=max_tokens, seed=seed)
    run_settings = {"teacher": teacher, "samples": samples, "temperature": temperature, "pairs": len(pairs)}
    with model_run(
        app_state.store,
        "judges train",
        engine,
        settings=run_settings,
        models=[teacher],
        progress=engine_progress(engine, f"teacher {teacher}"),
    ) as run:
        distilled = asyncio.run(_distil(engine, pairs, llm, render, parse, samples, settings, seed))
        run.counts = {
            "seen": distilled.seen,
            "processed": distilled.seen,
            "call_failed": distilled.failed,
            "kept": distilled.kept,
            "dropped": distilled.dropped,
        }
        run.error = distilled.failure_line()
    _report_distilled(distilled, samples)
    finish_run(engine, run)
    if not distilled.kept:
        raise UserError(
            f"{teacher} was right in all {samples} samples of both orders for no pair: no SFT data"
        )
    written = write_rows(distilled.rows, path)
    console.print(f"SFT set: {written.rows} rows → {path}")
    facts = {
        "model": teacher,
        "samples": samples,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "prompt_hash": PROMPT_HASH,
        "kept": distilled.kept,
        "dropped": distilled.dropped,
    }
    return written, facts


async def _distil(
    engine: Any, pairs: list[Any], llm: Any, render: Any, parse: Any, samples: int, settings: Any, seed: int
) -> Distilled:
    from livemed.training.exports import distil

    try:
        return await distil(pairs, llm, render, parse, samples=samples, settings=settings, seed=seed)
    finally:
        await engine.aclose()


def _report_distilled(distilled: Distilled, samples: int) -> None:
    console.print(
        f"teacher: {distilled.kept} pair(s) kept (right in all {samples} samples of both orders), "
        f"{distilled.dropped} dropped, {distilled.failed} with failed calls"
    )


def _train(settings: TrainSettings, out: Path, sets: dict[str, DataFile], extra: dict[str, Any]) -> None:
    from livemed.training.judging import parse
    from livemed.training.train import train_judge

    results = train_judge(
        settings,
        out,
        sft_data=sets.get("sft"),
        grpo_data=sets.get("grpo"),
        parse=parse,
        extra=extra,
        on_stage=lambda stage: console.print(f"training: {stage} …"),
    )
    for result in results:
        done = (
            "already trained with these inputs"
            if result.reused
            else f"trained in {result.card.seconds:.1f} s"
        )
        console.print(f"{result.stage}: {done} → {result.path} (card: {result.path / 'README.md'})")
    final = results[-1].path
    console.print(f"judge: hf/{final}  (run it with `livemed judges run --judge hf/{final}`)")


@judges_app.command("regimes")
def regimes(
    ctx: typer.Context,
    regime: list[str] = typer.Option(
        ...,
        "--regime",
        metavar="LABEL=JUDGE",
        help="A regime's label and judge, repeatable (e.g. --regime base=hf/./base "
        "--regime sft=hf/runs/sft/sft).",
    ),
    mode: str = typer.Option("pairwise", "--mode", metavar="pairwise|pointwise", help="Which runs."),
    policy: str = typer.Option(
        "separate", "--invalid", metavar="separate|half|wrong", help="What an invalid sample counts as."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", metavar="FILE", help="Also write every number as JSON, e.g. regimes.json."
    ),
) -> None:
    """Training regimes side by side: `judges report`'s tables by regime, and gains against `base`.

    Reads stored verdicts only (no extra); judging with an hf/ checkpoint needs 'livemed\\[train]'."""
    import json

    from livemed.cli.judges_commands import load_results, print_tables
    from livemed.judges.meta import POLICIES
    from livemed.judges.tables import all_tables
    from livemed.training.compare import PAPER_NOTE, by_regime, gains, parse_regimes

    if policy not in POLICIES:
        raise ConfigError(f"--invalid must be one of {', '.join(POLICIES)}, got {policy!r}")
    try:
        wanted = parse_regimes(regime)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    chosen, missing = by_regime(load_results(state(ctx).existing_store, None, mode, policy), wanted, mode)
    if missing:
        raise UserError(
            f"no {mode} verdicts stored for {', '.join(missing)}: run "
            f"`livemed judges run --judge {missing[0]} --mode {mode}` first (for each of them)"
        )
    base = next((key for key in chosen if key.startswith("base (")), None)
    console.print(f"invalid-output policy: {policy} · Δ against: {base or 'no regime labelled base'}")
    print_tables([*all_tables(chosen), gains(chosen, base)])
    console.print(PAPER_NOTE)
    if json_out is not None:
        payload = {key: tables.as_dict() for key, tables in chosen.items()}
        write_text(json_out, json.dumps(payload, indent=2))
        console.print(f"wrote {json_out}")
