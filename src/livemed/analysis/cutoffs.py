"""The registry of model training-data cutoff dates: a bundled TOML file, overridable by the user's own.

```toml
[models."gpt-4o-mini"]
cutoff = 2023-10-31
source = "where the claim comes from"
aliases = ["gpt-4o-mini-2024-07-18"]
```

or a CSV file with columns `model,cutoff` (and optionally `source`), one model a line; its entries,
like a TOML file's with `include_defaults = true`, go on top of the bundled registry.
"""

from __future__ import annotations

import csv
import io
import tomllib
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from livemed.config import describe_validation_error
from livemed.errors import InputFileError

BUNDLED = "cutoffs.toml"
SIMULATION = "simulation"
"""A cutoff source starting with this word marks a simulated baseline (not a real model's cutoff)."""


class CutoffEntry(BaseModel):
    """One model's training-data cutoff and the source of that claim."""

    model_config = ConfigDict(extra="forbid")

    cutoff: date
    source: str = Field(min_length=1, description="where the claim comes from (a URL or document)")
    aliases: list[str] = Field(default_factory=list)
    note: str = ""

    @property
    def simulated(self) -> bool:
        """The cutoff is a simulation's (the demo's declared cutoffs), not a real model's."""
        return self.source.strip().lower().startswith(SIMULATION)


class CutoffFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include_defaults: bool = Field(default=True, description="also use the bundled registry")
    models: dict[str, CutoffEntry] = Field(default_factory=dict)


def parse_cutoffs(text: str, origin: str) -> CutoffFile:
    """Parse a registry file's text; errors name `origin`."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(origin, f"invalid TOML: {exc}") from None
    try:
        return CutoffFile.model_validate(data)
    except ValidationError as exc:
        raise InputFileError(origin, describe_validation_error(exc)) from None


def parse_cutoffs_csv(text: str, origin: str) -> CutoffFile:
    """Parse a CSV `model,cutoff[,source]` file; a row without a source gets "FILE, line N" as its source."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    missing = [c for c in ("model", "cutoff") if c not in (reader.fieldnames or [])]
    if missing:
        raise InputFileError(
            origin, f"a CSV cutoff file needs the columns model,cutoff (missing: {', '.join(missing)})", 1
        )
    models: dict[str, CutoffEntry] = {}
    for row in reader:
        line = reader.line_num
        model = (row.get("model") or "").strip()
        if not model:
            raise InputFileError(origin, "empty model", line)
        try:
            day = date.fromisoformat((row.get("cutoff") or "").strip())
        except ValueError:
            raise InputFileError(
                origin, f"cutoff must be a date like 2023-10-31, got {row.get('cutoff')!r}", line
            ) from None
        source = (row.get("source") or "").strip() or f"{Path(origin).name}, line {line}"
        models[model] = CutoffEntry(cutoff=day, source=source)
    return CutoffFile(models=models)


def bundled_cutoffs() -> dict[str, CutoffEntry]:
    text = resources.files("livemed.analysis").joinpath(BUNDLED).read_text(encoding="utf-8")
    return parse_cutoffs(text, f"livemed/analysis/{BUNDLED}").models


def load_cutoffs(path: str | Path | None = None) -> dict[str, CutoffEntry]:
    """The bundled registry, with the entries of the user's file (if any) on top.

    The user's entries come last in the returned dict, and `find_cutoff` lets later entries win a
    name, so a user entry overrides a bundled one also when it is keyed by an alias of it or spelled
    in another letter case.
    """
    if path is None:
        return bundled_cutoffs()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputFileError(str(path), f"cannot read the cutoff registry: {exc.strerror or exc}") from None
    user = (
        parse_cutoffs_csv(text, str(path))
        if Path(path).suffix.lower() == ".csv"
        else parse_cutoffs(text, str(path))
    )
    merged = bundled_cutoffs() if user.include_defaults else {}
    for key in user.models:
        merged.pop(key, None)  # re-inserted below, after the bundled entries
    merged.update(user.models)
    return merged


def _names(model_id: str) -> list[str]:
    """The names a model id may be registered under: the id, the id without provider, its last segment."""
    names = [model_id]
    if "/" in model_id:
        names.append(model_id.split("/", 1)[1])
        names.append(model_id.rsplit("/", 1)[1])
    return [n.lower() for n in names]


def find_cutoff(model_id: str, registry: dict[str, CutoffEntry]) -> tuple[str, CutoffEntry] | None:
    """The registry key and entry for a model id, or None (exact names only: no prefix guessing).

    Names (keys and aliases) match case-insensitively; when two entries claim a name, the later one
    in `registry` wins (`load_cutoffs` puts the user's entries after the bundled ones).
    """
    index: dict[str, tuple[str, CutoffEntry]] = {}
    for key, entry in registry.items():
        for name in [key, *entry.aliases]:
            index[name.lower()] = (key, entry)
    for name in _names(model_id):
        if name in index:
            return index[name]
    return None
