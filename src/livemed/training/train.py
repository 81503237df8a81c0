"""Train a judge with TRL: SFT, GRPO, or SFT followed by GRPO, optionally with LoRA (peft).

`train_judge(settings, out, sft_data=..., grpo_data=..., parse=...)` runs the regime's stages in order;
each stage reads the previous stage's checkpoint (the first reads `settings.base`) and writes a plain
transformers checkpoint to `out/<stage>` (LoRA adapters merged into the weights, so `hf/out/<stage>`
and vLLM load it as is) with a model card beside it (`model_card.py`). A stage whose card says it
finished with the same inputs (settings, data hash, input checkpoint) is not trained again.

- Seeds: `transformers.set_seed(seed)` before loading, and the trainers' own `seed`; on one CPU or
  GPU the same seed gives the same weights (the smoke test checks it on CPU).
- GRPO: the reward is `reward.reward_funcs(settings.reward, parse)`; TRL's sampler does not shuffle
  (`shuffle_dataset=False`, the export already shuffled pairs with the seed), so both orders of a pair
  are generated in the same batch when the prompts per generation batch
  (batch size × gradient accumulation ÷ generations) are even — required for the consistency reward,
  recorded as `position_agnostic_batches` otherwise.
- Precision: bf16 on a GPU that supports it, else fp32; `use_cpu` when no GPU is present.

Needs `pip install 'livemed[train]'`; imports torch, transformers, trl, datasets and peft on call.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from livemed.errors import ConfigError, MissingDependencyError
from livemed.training.exports import DataFile, read_rows
from livemed.training.model_card import CARD_FILE, StageCard, read_card, write_card
from livemed.training.reward import Parse, RewardName, reward_funcs

Regime = Literal["sft", "grpo", "sft+grpo"]
Stage = Literal["sft", "grpo"]
REGIMES: dict[Regime, tuple[Stage, ...]] = {"sft": ("sft",), "grpo": ("grpo",), "sft+grpo": ("sft", "grpo")}


class TrainSettings(BaseModel):
    """Every setting of a training run (all recorded in the model card)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    regime: Regime
    base: str = Field(min_length=1, description="a local checkpoint folder or a hub id")
    seed: int = 0
    lora_r: int = Field(default=0, ge=0, description="LoRA rank; 0 = full fine-tuning")
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.05, ge=0, lt=1)
    batch_size: int = Field(default=8, ge=1, description="per device; GRPO counts completions")
    gradient_accumulation: int = Field(default=1, ge=1)
    logging_steps: int = Field(default=10, ge=1)
    gradient_checkpointing: bool = False
    # SFT
    sft_epochs: float = Field(default=1.0, gt=0)
    sft_max_steps: int = Field(default=-1, description="-1 = run the epochs")
    sft_learning_rate: float = Field(default=2e-5, gt=0)
    max_length: int = Field(default=2048, ge=16, description="SFT: prompt + completion tokens")
    # GRPO
    grpo_epochs: float = Field(default=1.0, gt=0)
    grpo_max_steps: int = Field(default=-1, description="-1 = run the epochs")
    grpo_learning_rate: float = Field(default=1e-6, gt=0)
    num_generations: int = Field(default=4, ge=2)
    max_completion_length: int = Field(default=1024, ge=1)
    temperature: float = Field(default=1.0, gt=0)
    beta: float = Field(default=0.0, ge=0, description="KL coefficient (J1 used 0.01 for 8B)")
    reward: RewardName = "correctness"

    def stage_settings(self, stage: Stage) -> dict[str, Any]:
        """The settings that shape one stage (its resume key)."""
        shared = {
            "base",
            "seed",
            "lora_r",
            "lora_alpha",
            "lora_dropout",
            "batch_size",
            "gradient_accumulation",
            "logging_steps",
            "gradient_checkpointing",
        }
        prefix = "sft_" if stage == "sft" else "grpo_"
        own = (
            {"max_length"}
            if stage == "sft"
            else {"num_generations", "max_completion_length", "temperature", "beta", "reward"}
        )
        data = self.model_dump()
        return {k: v for k, v in data.items() if k in shared or k in own or k.startswith(prefix)}

    def position_agnostic(self) -> bool:
        prompts, rest = divmod(self.batch_size * self.gradient_accumulation, self.num_generations)
        return rest == 0 and prompts % 2 == 0


@dataclass
class StageResult:
    stage: Stage
    path: Path
    card: StageCard
    reused: bool


def ensure_extra() -> None:
    try:
        import datasets  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(exc.name or "trl", "train") from None


def check_settings(settings: TrainSettings) -> None:
    """Refuse settings TRL would refuse later, before any work is done."""
    if "grpo" not in REGIMES[settings.regime]:
        return
    if (settings.batch_size * settings.gradient_accumulation) % settings.num_generations:
        raise ConfigError(
            f"batch size × gradient accumulation ({settings.batch_size} × {settings.gradient_accumulation}) "
            f"must be a multiple of --num-generations ({settings.num_generations})"
        )
    if settings.reward == "consistency" and not settings.position_agnostic():
        raise ConfigError(
            "the consistency reward needs both orders of a pair in one batch: batch size × gradient "
            "accumulation ÷ --num-generations must be even"
        )


def input_key(path_or_id: str) -> str:
    """What identifies a stage's input checkpoint: a local folder's fingerprint, else the hub id."""
    from livemed.models.hf import fingerprint

    path = Path(path_or_id).expanduser()
    return f"{path.resolve()}#{fingerprint(path)}" if path.is_dir() else path_or_id


def stage_key(settings: TrainSettings, stage: Stage, data: DataFile, source: str) -> str:
    blob = json.dumps(
        {
            "stage": stage,
            "settings": settings.stage_settings(stage),
            "data": data.sha256,
            "input": input_key(source),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_judge(
    settings: TrainSettings,
    out: Path,
    *,
    sft_data: DataFile | None = None,
    grpo_data: DataFile | None = None,
    parse: Parse,
    extra: dict[str, Any] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> list[StageResult]:
    """Run the regime's stages (see the module docstring); returns each stage's checkpoint and card.

    `extra` goes into every card as is (the pairs file, the teacher, the export counts)."""
    ensure_extra()
    check_settings(settings)
    data = {"sft": sft_data, "grpo": grpo_data}
    results: list[StageResult] = []
    source = settings.base
    for stage in REGIMES[settings.regime]:
        stage_data = data[stage]
        if stage_data is None:
            raise ConfigError(f"the {stage} stage needs its training set")
        path = out / stage
        key = stage_key(settings, stage, stage_data, source)
        done = read_card(path / CARD_FILE)
        if done is not None and done.key == key:
            results.append(StageResult(stage, path, done, reused=True))
        else:
            if on_stage is not None:
                on_stage(stage)
            card = _run_stage(settings, stage, source, stage_data, path, key, parse, results, extra or {})
            results.append(StageResult(stage, path, card, reused=False))
        source = str(path)
    return results


def _run_stage(
    settings: TrainSettings,
    stage: Stage,
    source: str,
    data: DataFile,
    path: Path,
    key: str,
    parse: Parse,
    before: list[StageResult],
    extra: dict[str, Any],
) -> StageCard:
    import transformers

    transformers.set_seed(settings.seed)
    model, tokenizer, device = _load(source)
    started = time.time()
    trainer = (_sft_trainer if stage == "sft" else _grpo_trainer)(
        settings, model, tokenizer, data, path, parse, device
    )
    output = trainer.train()
    seconds = time.time() - started
    final = trainer.model
    if hasattr(final, "merge_and_unload"):  # a peft model: merge the adapter into the weights
        final = final.merge_and_unload()
    shutil.rmtree(path / "trainer", ignore_errors=True)  # save_strategy "no": nothing kept there
    path.mkdir(parents=True, exist_ok=True)
    final.save_pretrained(path)
    tokenizer.save_pretrained(path)
    card = StageCard(
        key=key,
        stage=stage,
        regime=settings.regime,
        input=source,
        settings=settings.model_dump(),
        data=data.card(),
        previous=[r.card.model_dump(mode="json") for r in before],
        metrics=dict(output.metrics),
        log_history=list(trainer.state.log_history),
        seconds=round(seconds, 3),
        device=device,
        position_agnostic_batches=settings.position_agnostic() if stage == "grpo" else None,
        extra=extra,
    )
    write_card(path, card)
    return card


def _load(source: str) -> tuple[Any, Any, str]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the checkpoint {source!r}: {exc}") from None
    if tokenizer.chat_template is None:
        raise ConfigError(f"{source!r}: the tokenizer has no chat template (a judge needs one)")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, device


def _common(settings: TrainSettings, path: Path, device: str) -> dict[str, Any]:
    import dataclasses

    import torch
    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    # transformers 5.2x renamed gradient_checkpointing (TRL's configs default it to True)
    checkpointing = (
        "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    )
    return {
        checkpointing: settings.gradient_checkpointing,
        "output_dir": str(path / "trainer"),
        "seed": settings.seed,
        "data_seed": settings.seed,
        "per_device_train_batch_size": settings.batch_size,
        "gradient_accumulation_steps": settings.gradient_accumulation,
        "logging_steps": settings.logging_steps,
        "bf16": device == "cuda" and torch.cuda.is_bf16_supported(),
        "use_cpu": device == "cpu",
        "report_to": "none",
        "save_strategy": "no",
        "disable_tqdm": True,
    }


def _peft(settings: TrainSettings) -> Any:
    if not settings.lora_r:
        return None
    try:
        from peft import LoraConfig
    except ImportError:
        raise MissingDependencyError("peft", "train") from None
    return LoraConfig(
        r=settings.lora_r,
        lora_alpha=settings.lora_alpha,
        lora_dropout=settings.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def _sft_trainer(
    settings: TrainSettings, model: Any, tokenizer: Any, data: DataFile, path: Path, parse: Parse, device: str
) -> Any:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = [{"prompt": r["prompt"], "completion": r["completion"]} for r in read_rows(data.path)]
    config = SFTConfig(
        **_common(settings, path, device),
        learning_rate=settings.sft_learning_rate,
        num_train_epochs=settings.sft_epochs,
        max_steps=settings.sft_max_steps,
        max_length=settings.max_length,
    )
    return SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=_peft(settings),
    )


def _grpo_trainer(
    settings: TrainSettings, model: Any, tokenizer: Any, data: DataFile, path: Path, parse: Parse, device: str
) -> Any:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    config = GRPOConfig(
        **_common(settings, path, device),
        learning_rate=settings.grpo_learning_rate,
        num_train_epochs=settings.grpo_epochs,
        max_steps=settings.grpo_max_steps,
        num_generations=settings.num_generations,
        max_completion_length=settings.max_completion_length,
        temperature=settings.temperature,
        beta=settings.beta,
        shuffle_dataset=False,
    )
    return GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs(settings.reward, parse),
        args=config,
        train_dataset=Dataset.from_list(read_rows(data.path)),
        processing_class=tokenizer,
        peft_config=_peft(settings),
    )
