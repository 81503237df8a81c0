"""What training takes from `livemed.judges`: the pairwise prompt, the strict parser, the pairs file.

Training, distillation and meta-evaluation use the same template (`judges.templates.pairwise_messages`)
and the same parser (`judges.parse.parse_pairwise`), so a trained judge is rewarded for exactly the
output the meta-evaluation counts as compliant.

`split_heldout` keeps whole benchmark items out of training (by a seeded hash of the item), so the
regimes can be compared on pairs none of them was trained on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.jsonl import parse_objects, record_from
from livemed.judges.parse import parse_pairwise
from livemed.judges.templates import PROMPT_HASHES, pairwise_messages
from livemed.records import Pair
from livemed.training.reward import Verdict

PROMPT_HASH = PROMPT_HASHES["pairwise"]


# The judge's messages for a pair in one slot order (the builder itself, covered by the prompt tests).
render = pairwise_messages


def parse(text: str) -> Verdict:
    """The verdict of a raw judge output (its `<think>` block included), or None when non-compliant."""
    return parse_pairwise(text).verdict


def _pair(data: dict[str, Any]) -> Pair:
    record = record_from(data, default_kind=Pair.kind)
    if not isinstance(record, Pair):
        raise ValueError(f"a {record.kind} record, not a {Pair.kind}")
    return record


def read_pairs(path: Path) -> Iterator[Pair | InputFileError]:
    """Each pair of a JSONL file (`judge_pair` records), or an error naming file:line."""
    return parse_objects(path, _pair)


def heldout(pair: Pair, fraction: float, seed: int) -> bool:
    """Is the pair's benchmark item in the held-out share (same item, same answer, for every pair)?"""
    digest = hashlib.sha256(f"{seed}:{pair.parent_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_heldout(pairs: Sequence[Pair], fraction: float, seed: int) -> tuple[list[Pair], list[Pair]]:
    """(training pairs, held-out pairs), split by item."""
    if not 0 <= fraction < 1:
        raise ValueError("the held-out fraction must be in [0, 1)")
    train: list[Pair] = []
    held: list[Pair] = []
    for pair in pairs:
        (held if heldout(pair, fraction, seed) else train).append(pair)
    return train, held
