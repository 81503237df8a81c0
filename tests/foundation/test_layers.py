"""The house's structure as ARCHITECTURE.md draws it: every import runs down a floor, and no module imports
itself around a loop.

The imports are read from the source (every `import` and `from … import`, inside functions and under
`TYPE_CHECKING` too); a room is a folder or a loose module of `src/livemed/`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "livemed"
ROW = re.compile(r"^\| (\d+) \| (.+?) \| .+ \|$")


def floors() -> dict[str, int]:
    """Room -> floor, from ARCHITECTURE.md's table (`cli/` -> `cli`, `config.py` -> `config`)."""
    found: dict[str, int] = {}
    for line in (ROOT / "ARCHITECTURE.md").read_text().splitlines():
        if match := ROW.match(line):
            for room in re.findall(r"`([a-z_]+)(?:/|\.py)`", match.group(2)):
                found[room] = int(match.group(1))
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported(path: Path) -> Iterator[str]:
    """The livemed modules `path` imports (`from livemed.x import y` names `livemed.x.y` when y is one)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("livemed."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("livemed"):
            subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES]
            yield from subs if len(subs) == len(node.names) else [node.module, *subs]


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # `livemed` itself (its __version__) is no room


def test_every_room_has_a_floor_and_every_floor_a_room() -> None:
    rooms = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if not p.name.startswith("__")}
    rooms = {r for r in rooms if (PACKAGE / r).is_dir() or (PACKAGE / f"{r}.py").is_file()}
    assert set(floors()) == rooms


def test_every_import_runs_down_a_floor() -> None:
    floor = floors()
    upward = [
        f"{module} -> {target}"
        for module, path in MODULES.items()
        for target in imported(path)
        if (a := room(module)) and (b := room(target)) and a != b and floor[a] <= floor[b]
    ]
    assert upward == []


def loaded_by_name(module: str, path: Path) -> set[str]:
    """The modules `module` imports by name at run time: its registries' `"livemed.x.y:attr"` strings,
    and for the CLI's root, the command modules of `COMMANDS`."""
    text = path.read_text()
    found = set(re.findall(r'"(livemed(?:\.\w+)+):\w+"', text))
    if module == "livemed.cli.application":
        from livemed.cli.application import COMMANDS

        found |= {f"livemed.cli.{name}" for names in COMMANDS.values() for name in names}
    return found & MODULES.keys()


def test_no_module_imports_itself_around_a_loop() -> None:
    """Lazy registries included (the offline baselines, providers, sources, the CLI's commands)."""
    graph = {
        m: {t for t in imported(path) if t in MODULES} | loaded_by_name(m, path) - {m}
        for m, path in MODULES.items()
    }
    assert sum(len(loaded_by_name(m, p)) for m, p in MODULES.items()) > 30  # the registries were read
    assert loop(graph) is None


def loop(graph: dict[str, set[str]]) -> list[str] | None:
    """One loop of imports in `graph` (module -> the modules it imports), or None when there is none."""
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_loop_finder_finds_a_loop() -> None:
    found = loop({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert found is not None
    assert set(found) == {"a", "b", "c"}
    assert loop({"a": {"b"}, "b": set()}) is None


def test_the_architecture_is_one_page() -> None:
    assert len((ROOT / "ARCHITECTURE.md").read_text().splitlines()) <= 150
