"""CPU smoke run, nothing downloaded: a tiny random Llama (config + locally trained tokenizer), a few SFT
steps from a scripted teacher's distilled set, then a few GRPO steps from that checkpoint.

Asserts that the pipeline runs, saves, records its settings and is deterministic under a seed — not that
the reward improves (the model is random)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.models.registry import PROVIDERS
from livemed.training.exports import file_sha256, grpo_rows, write_rows
from livemed.training.judging import parse, render
from tests.training.builders import judge_all, make_pairs, write_pairs
from tests.training.extra import TRAIN_MARKS

pytestmark = TRAIN_MARKS

TINY = [
    "--sft-max-steps", "2", "--grpo-max-steps", "2", "--batch-size", "4", "--num-generations", "2",
    "--max-completion-length", "12", "--max-length", "1024", "--logging-steps", "1",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from livemed.training.tiny import build_tiny_base

    corpus = [m["content"] for row in grpo_rows(make_pairs(4), render) for m in row["prompt"]]
    return build_tiny_base(tmp_path_factory.mktemp("tiny") / "base", corpus, seed=0)


def train(store: Path, *args: str, bad: bool = False) -> str:
    """The command's output; with `bad`, it must end with the one-line error for skipped lines (exit 1)."""
    argv = ["--store", str(store), "judges", "train", *args]
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == (1 if bad else 0), result.output + repr(result.exception)
    printed = " ".join(result.output.split())
    assert ("1 bad line(s) were skipped" in printed) is bad
    return printed


def test_sft_then_grpo_runs_saves_records_and_resumes(
    tmp_path: Path, tiny_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.training.builders:teacher")
    pairs = write_pairs(make_pairs(8), tmp_path / "pairs.jsonl")
    with pairs.open("a") as handle:
        handle.write("{broken\n")  # reported with file:line, the rest is trained on, exit 1
    out = tmp_path / "run"
    args = ["--regime", "sft+grpo", "--base", str(tiny_base), "--pairs", str(pairs), "--out", str(out),
            "--teacher", "fake/teacher", "--samples", "2", "--heldout", "0.25", *TINY]  # fmt: skip
    printed = train(tmp_path / "s.db", *args, bad=True)
    assert f"skipped {pairs}:9" in printed
    assert "kept (right in all 2 samples of both orders)" in printed
    assert f"judge: hf/{out / 'grpo'}" in printed
    for name in ("sft", "grpo"):
        assert (out / name / "model.safetensors").is_file()
        assert (out / name / "README.md").read_text().startswith("---\nbase_model:")
    grpo_card = json.loads((out / "grpo" / "livemed-training.json").read_text())
    sft_card = json.loads((out / "sft" / "livemed-training.json").read_text())
    assert grpo_card["settings"]["regime"] == "sft+grpo"
    assert grpo_card["settings"]["num_generations"] == 2
    assert grpo_card["input"] == str(out / "sft")
    assert sft_card["input"] == str(tiny_base)
    assert grpo_card["data"]["sha256"] == file_sha256(out / "data" / "grpo.jsonl")
    assert sft_card["data"]["sha256"] == file_sha256(out / "data" / "sft.jsonl")
    assert grpo_card["previous"][0]["stage"] == "sft"
    assert grpo_card["versions"]["trl"]
    assert grpo_card["versions"]["torch"]
    assert grpo_card["extra"]["pairs"]["sha256"] == file_sha256(pairs)
    assert grpo_card["extra"]["teacher"]["model"] == "fake/teacher"
    assert grpo_card["position_agnostic_batches"] is True
    assert any("rewards/verdict_correct/mean" in entry for entry in grpo_card["log_history"])
    assert sft_card["metrics"]["train_loss"] > 0
    held = (out / "data" / "heldout-pairs.jsonl").read_text().splitlines()
    trained_on = grpo_card["extra"]["pairs"]["trained_on"]
    assert len(held) + trained_on == 8
    assert len((out / "data" / "grpo.jsonl").read_text().splitlines()) == 2 * trained_on
    # again: the teacher's replies come from the cache and both stages are found finished
    weights = (out / "grpo" / "model.safetensors").stat().st_mtime_ns
    again = train(tmp_path / "s.db", *args, bad=True)
    assert again.count("already trained with these inputs") == 2
    assert (out / "grpo" / "model.safetensors").stat().st_mtime_ns == weights
    # the trained judge runs through the same engine; its (random) output is parsed, never a crash
    from livemed.judges.parse import parse_pairwise
    from livemed.models import Completion, Settings, get_model

    replies = judge_all(
        get_model(f"hf/{out / 'grpo'}"), None, Settings(temperature=1.0, max_tokens=16, seed=1)
    )
    assert all(isinstance(r, Completion) for r in replies)
    for reply in replies:
        parsed = parse_pairwise(reply.text, reply.reasoning)  # type: ignore[union-attr]
        assert parsed.valid or parsed.reason


def tensors(path: Path) -> dict[str, object]:
    from safetensors.torch import load_file

    loaded: dict[str, object] = load_file(str(path / "model.safetensors"))
    return loaded


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    import torch

    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_same_seed_same_weights(tmp_path: Path, tiny_base: Path) -> None:
    from livemed.training.train import TrainSettings, train_judge

    seen: list[str] = []

    def spy(text: str):  # type: ignore[no-untyped-def]
        seen.append(text)
        return parse(text)

    rows = grpo_rows(make_pairs(4), render, seed=0)

    def answer(row: dict[str, object]) -> list[dict[str, str]]:
        return [
            {"role": "assistant", "content": f"<think>x</think><answer>[[{row['gold_verdict']}]]</answer>"}
        ]

    sft = [{**r, "completion": answer(r)} for r in rows]
    data = {
        "sft_data": write_rows(sft, tmp_path / "sft.jsonl"),
        "grpo_data": write_rows(rows, tmp_path / "g.jsonl"),
    }
    common: dict[str, object] = {
        "regime": "sft+grpo",
        "base": str(tiny_base),
        "sft_max_steps": 2,
        "grpo_max_steps": 1,
        "batch_size": 4,
        "num_generations": 2,
        "max_completion_length": 8,
        "max_length": 1024,
    }

    def run(name: str, seed: int) -> Path:
        train_judge(TrainSettings(**common, seed=seed), tmp_path / name, parse=spy, **data)  # type: ignore[arg-type]
        return tmp_path / name

    first, second, other = run("a", 0), run("b", 0), run("c", 1)
    assert same(tensors(first / "sft"), tensors(second / "sft"))
    assert same(tensors(first / "grpo"), tensors(second / "grpo"))
    assert not same(tensors(first / "sft"), tensors(tiny_base))  # SFT changed the weights
    assert not same(tensors(first / "sft"), tensors(other / "sft"))  # and the seed matters
    assert len(seen) == 3 * 4  # GRPO scored every rollout (4 completions a step, one step, three runs)


def test_the_tiny_base_command_learns_the_pairs_prompts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from livemed.training.tiny import main

    pairs = write_pairs(make_pairs(3), tmp_path / "pairs.jsonl")
    main([str(tmp_path / "base"), str(pairs)])
    assert "tiny random Llama base written to" in capsys.readouterr().out
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "base")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "base")
    assert 10_000 < sum(p.numel() for p in model.parameters()) < 100_000
    prompt = render(make_pairs(1)[0], "swapped")[1]["content"] + " ünïcode ✓"
    assert tokenizer.decode(tokenizer(prompt, add_special_tokens=False)["input_ids"]) == prompt
    chat = tokenizer.apply_chat_template(
        render(make_pairs(1)[0], "original"), add_generation_prompt=True, tokenize=False
    )
    assert chat.startswith("<s><|system|>\n")
    assert chat.endswith("<|assistant|>\n")


def test_lora_adapters_are_merged_into_a_plain_checkpoint(tmp_path: Path, tiny_base: Path) -> None:
    from livemed.training.train import TrainSettings, train_judge

    rows = grpo_rows(make_pairs(2), render, seed=0)
    verdict = "<think>x</think><answer>[[{}]]</answer>"
    sft = [
        {**r, "completion": [{"role": "assistant", "content": verdict.format(r["gold_verdict"])}]}
        for r in rows
    ]
    settings = TrainSettings(
        regime="sft", base=str(tiny_base), sft_max_steps=2, batch_size=4, max_length=1024, lora_r=4,
        sft_learning_rate=1e-2,
    )  # fmt: skip
    [result] = train_judge(
        settings, tmp_path / "run", sft_data=write_rows(sft, tmp_path / "s.jsonl"), parse=parse
    )
    files = {p.name for p in result.path.iterdir()}
    assert "model.safetensors" in files
    assert "adapter_config.json" not in files  # merged: loads without peft, in hf/ and vLLM alike
    merged, base = tensors(result.path), tensors(tiny_base)
    assert merged.keys() == base.keys()
    assert not same(merged, base)
    assert result.card.settings["lora_r"] == 4


def test_grpo_trainer_runs_the_async_reward(tmp_path: Path, tiny_base: Path) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from livemed.training.reward import async_correctness_reward_func

    seen: list[str] = []

    def spy(text: str):  # type: ignore[no-untyped-def]
        seen.append(text)
        return parse(text)

    # transformers 5.2x renamed gradient_checkpointing (TRL defaults it to True)
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    checkpointing = (
        "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    )
    config = GRPOConfig(
        output_dir=str(tmp_path / "t"), use_cpu=True, bf16=False, max_steps=1, per_device_train_batch_size=4,
        num_generations=2, max_completion_length=8, report_to="none", save_strategy="no",
        shuffle_dataset=False, disable_tqdm=True, **{checkpointing: False},
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_base),
        reward_funcs=[async_correctness_reward_func(spy)],
        args=config,
        train_dataset=Dataset.from_list(grpo_rows(make_pairs(2), render)),
        processing_class=AutoTokenizer.from_pretrained(tiny_base),
    )
    trainer.train()
    assert len(seen) == 4
    assert any("rewards/verdict_correct/mean" in entry for entry in trainer.state.log_history)
