"""The card beside every trained checkpoint: settings, data hashes, library versions, results.

`write_card(folder, card)` writes `livemed-training.json` (the record, read back by `read_card` to tell a
finished stage from one to train) and `README.md` (a Hugging Face model card: YAML front matter with
`base_model`, `library_name`, `tags`, then the same facts in prose and a JSON block).
"""

from __future__ import annotations

import json
import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from livemed import __version__
from livemed.common.atomic import write_text

CARD_FILE = "livemed-training.json"
LIBRARIES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "tokenizers")


def library_versions() -> dict[str, str | None]:
    """Installed versions of the training libraries (None when absent), Python's and livemed's."""
    versions: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["python"] = platform.python_version()
    versions["livemed"] = __version__
    return versions


class StageCard(BaseModel):
    """One finished training stage."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="hash of the stage's settings, data hash and input checkpoint")
    stage: str
    regime: str
    input: str = Field(description="the checkpoint this stage started from")
    settings: dict[str, Any]
    data: dict[str, Any] = Field(description="path, sha256 and rows of the training set")
    previous: list[dict[str, Any]] = Field(default_factory=list, description="cards of earlier stages")
    metrics: dict[str, Any] = Field(default_factory=dict, description="the trainer's final metrics")
    log_history: list[dict[str, Any]] = Field(default_factory=list)
    seconds: float = 0.0
    device: str = ""
    position_agnostic_batches: bool | None = None
    extra: dict[str, Any] = Field(default_factory=dict, description="pairs file, teacher, export counts")
    versions: dict[str, str | None] = Field(default_factory=library_versions)
    finished_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def read_card(path: Path) -> StageCard | None:
    """The card at `path`, or None when there is none (or it is not one of ours)."""
    try:
        return StageCard.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


def write_card(folder: Path, card: StageCard) -> None:
    write_text(folder / "README.md", render_readme(card))
    write_text(folder / CARD_FILE, card.model_dump_json(indent=2) + "\n")  # last: it marks the stage done


def _base_model(card: StageCard) -> str:
    return str(card.previous[0]["input"]) if card.previous else card.input


def render_readme(card: StageCard) -> str:
    stages = [*(str(p["stage"]) for p in card.previous), card.stage]
    facts = {
        "regime": card.regime,
        "stages": stages,
        "settings": card.settings,
        "data": card.data,
        "earlier stages' data": [p["data"] for p in card.previous],
        "metrics": card.metrics,
        "versions": card.versions,
        "extra": card.extra,
    }
    lines = [
        "---",
        f"base_model: {json.dumps(_base_model(card))}",
        "library_name: transformers",
        "tags: [livemed, judge, trl, " + ", ".join(stages) + "]",
        "---",
        "",
        f"# livemed judge — {card.regime} (stage {card.stage})",
        "",
        f"Trained by livemed {card.versions.get('livemed')} with TRL {card.versions.get('trl')} from "
        f"`{card.input}` on {card.data.get('rows')} rows (sha256 {card.data.get('sha256')}), "
        f"in {card.seconds:.1f} s on {card.device or 'an unknown device'}.",
        "",
        "Run it through livemed as `hf/<this folder>`, or serve it with vLLM (see docs/training.md).",
        "Its validity is what `livemed judges` measures on held-out pairs, not what this card says.",
        "",
        "```json",
        json.dumps(facts, indent=2, sort_keys=True, default=str),
        "```",
        "",
    ]
    return "\n".join(lines)
