"""Where livemed keeps files it can rebuild (evidence downloads and indexes, derived vocabularies)."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """`$LIVEMED_CACHE_DIR`, else `$XDG_CACHE_HOME/livemed`, else `~/.cache/livemed`."""
    if configured := os.environ.get("LIVEMED_CACHE_DIR"):
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "livemed"
