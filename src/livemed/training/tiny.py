"""A tiny, randomly initialised Llama-architecture judge base, built offline (for smoke runs and tests).

`build_tiny_base(out, corpus)` trains a byte-level BPE tokenizer on `corpus` with `tokenizers`, gives it
a small chat template, builds `LlamaForCausalLM` from a config (2 layers, hidden size 32: ~40K
parameters) with a seeded random init, and saves both with `save_pretrained`, so `out` loads like any
Hugging Face checkpoint (`AutoModelForCausalLM.from_pretrained(out)`, `hf/<out>`, `--base <out>`).
Nothing is downloaded. The model's output is noise; it exists to exercise the pipeline, not to judge.

    python -m livemed.training.tiny OUT_DIR [PAIRS.jsonl]   # the tokenizer learns the pairs' prompts
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ["<unk>", "<pad>", "<s>", "</s>"]
# role header, content, end of turn; the assistant turn is marked for `assistant_only_loss`.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|assistant|>\n' }}{% generation %}{{ message['content'] + eos_token }}{% endgeneration %}{{ '\n' }}"
    "{% else %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + '\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
DEFAULT_CORPUS = (
    "You are an impartial judge. Compare response A and response B.",
    "<think>Response A matches the reference; response B drops a span.</think>",
    "<answer>[[A]]</answer>",
    "<answer>[[B]]</answer>",
    "Population: adults with seasonal allergic rhinitis. Intervention: budesonide.",
    "The creatinine clearance is 54.2 mL/min. The answer is (B) acetazolamide.",
)


def train_tokenizer(corpus: Iterable[str], *, vocab_size: int = 400) -> object:
    """A byte-level BPE `PreTrainedTokenizerFast` trained on `corpus` (any text encodes: byte fallback)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([*DEFAULT_CORPUS, *corpus], trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def build_tiny_base(out: Path, corpus: Iterable[str] = (), *, seed: int = 0, vocab_size: int = 400) -> Path:
    """Train the tokenizer, build the random tiny Llama under `seed`, save both to `out`; returns `out`."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(corpus, vocab_size=vocab_size)
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in SPECIAL_TOKENS}  # type: ignore[attr-defined]
    config = LlamaConfig(
        vocab_size=len(tokenizer),  # type: ignore[arg-type]
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,  # RoPE: no learned positions, so no cost
        bos_token_id=ids["<s>"],
        eos_token_id=ids["</s>"],
        pad_token_id=ids["<pad>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"]
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)  # type: ignore[attr-defined]
    return out


def corpus_from_pairs(path: Path) -> list[str]:
    """The judge prompts of every pair in a pairs JSONL file (both orders), for the tokenizer's corpus;
    lines that are not pairs are left out."""
    from livemed.training.judging import read_pairs, render

    texts: list[str] = []
    for pair in read_pairs(path):
        if not isinstance(pair, Exception):
            texts.extend(m["content"] for order in ("original", "swapped") for m in render(pair, order))
    return texts


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or len(args) > 2:
        sys.exit("usage: python -m livemed.training.tiny OUT_DIR [PAIRS.jsonl]")
    corpus = corpus_from_pairs(Path(args[1])) if len(args) == 2 else []
    out = build_tiny_base(Path(args[0]), corpus)
    print(f"tiny random Llama base written to {out}")


if __name__ == "__main__":
    main()
