"""Domain packs: everything domain-specific in one folder of data and prompt text, not code forks.

`load_pack("medical")` (the default) and `load_pack("legal")` read the packs shipped here;
`load_pack("path/to/pack")` reads a user's folder: its `pack.toml` and `prompts/*.txt`. A pack may
say `extends = "medical"` (or a path): what it leaves out — top-level sections and prompt files —
comes from that pack. `resolve_domain(option, config)` is the CLI's choice: `--domain`, then
`domain` in livemed.toml, then "medical".
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from livemed.domains.pack import AxisSpec, DomainPack, PatternHazard, ThemeSpec, WeightRule

DEFAULT_DOMAIN = "medical"
PACK_FILE = "pack.toml"
PROMPTS_DIR = "prompts"
BUNDLED_DIR = Path(__file__).resolve().parent


def bundled() -> list[str]:
    """The names of the packs shipped with livemed."""
    return list(_bundled())


@lru_cache(maxsize=1)
def _bundled() -> tuple[str, ...]:  # read once: `medical()` is called per prompt in the stages
    return tuple(sorted(p.parent.name for p in BUNDLED_DIR.glob(f"*/{PACK_FILE}")))


def pack_folder(spec: str | Path, base: Path | None = None) -> Path:
    """The folder a domain name or path points at (a relative path is relative to `base`)."""
    from livemed.errors import ConfigError

    text = str(spec)
    if text in bundled():
        return BUNDLED_DIR / text
    path = Path(text).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    if path.is_file() and path.name == PACK_FILE:
        path = path.parent
    if not (path / PACK_FILE).is_file():
        if "/" not in text and "\\" not in text and not path.exists():
            from livemed.errors import UnknownNameError

            raise UnknownNameError("domain pack", text, bundled())
        raise ConfigError(f"domain pack {text}: no {PACK_FILE} in {path}")
    return path.resolve()


def load_pack(spec: str | Path = DEFAULT_DOMAIN, base: Path | None = None) -> DomainPack:
    """The pack named `spec` (a bundled name or a folder), checked; errors are one line naming it."""
    return _load(pack_folder(spec, base), ())


@lru_cache(maxsize=16)
def _load(folder: Path, seen: tuple[Path, ...]) -> DomainPack:
    from livemed.config import describe_validation_error
    from livemed.errors import ConfigError

    data, prompts = _read(folder)
    if seen and folder in seen:
        raise ConfigError(f"domain pack {folder}: `extends` loops back to itself")
    parent = data.pop("extends", None)
    if parent is not None:
        base = _load(pack_folder(str(parent), folder), (*seen, folder))
        inherited = base.model_dump(exclude={"folder", "prompts", "name", "description"})
        data = {**inherited, **data}
        prompts = {**base.prompts, **prompts}
    try:
        return DomainPack.model_validate({**data, "prompts": prompts, "folder": folder})
    except ValidationError as exc:
        raise ConfigError(f"domain pack {folder / PACK_FILE}: {describe_validation_error(exc)}") from None


def _read(folder: Path) -> tuple[dict[str, Any], dict[str, str]]:
    from livemed.errors import ConfigError

    path = folder / PACK_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"domain pack {path}: cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"domain pack {path}: invalid TOML: {exc}") from None
    prompts = {}
    for file in sorted((folder / PROMPTS_DIR).glob("*.txt")):
        try:
            text = file.read_text(encoding="utf-8")
            prompts[file.stem] = text[:-1] if text.endswith("\n") else text  # the file's last newline
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"domain pack {folder}: cannot read {file.name}: {exc}") from None
    return data, prompts


def resolve_domain(option: str | None, domain: str | None, config_path: Path | None) -> DomainPack:
    """`--domain` (relative to the working folder), else livemed.toml's `domain` (relative to that
    file), else the medical pack."""
    if option:
        return load_pack(option, Path.cwd())
    if domain:
        return load_pack(domain, config_path.parent if config_path else Path.cwd())
    return load_pack(DEFAULT_DOMAIN)


def medical() -> DomainPack:
    """The default pack (what livemed did before packs existed)."""
    return load_pack(DEFAULT_DOMAIN)


__all__ = [
    "DEFAULT_DOMAIN",
    "AxisSpec",
    "DomainPack",
    "PatternHazard",
    "ThemeSpec",
    "WeightRule",
    "bundled",
    "load_pack",
    "medical",
    "pack_folder",
    "resolve_domain",
]
