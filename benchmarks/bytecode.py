"""Compile livemed's sources to bytecode before a benchmark times its start-up.

An installed package has its `.pyc` files (pip compiles them); an editable checkout writes them on its
first import, unless `PYTHONDONTWRITEBYTECODE` is set (it is on our benchmark machines), in which case
every `livemed` process compiles each module it imports from source again: ~0.5 s of a short command.
Each benchmark calls `compile_sources()` first, so what it times is the start-up a user's install has.
"""

from __future__ import annotations

import compileall
import importlib.util
from pathlib import Path


def compile_sources(*extra: str | Path) -> None:
    """Write the bytecode of this environment's livemed and of each `extra` source folder (another
    checkout's `src`, run with PYTHONPATH); files already compiled are left as they are."""
    spec = importlib.util.find_spec("livemed")
    folders = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    folders += [Path(p) for p in extra]
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
