from __future__ import annotations

import json
import re
import subprocess
import sys

from livemed import errors
from livemed.errors import (
    ConfigError,
    InputFileError,
    LivemedError,
    MissingDependencyError,
    ModelError,
    RetrievalError,
    RunError,
    UnknownNameError,
    UserError,
)


def test_tree_and_exit_codes() -> None:
    assert issubclass(ConfigError, UserError)
    from livemed.models import FatalModelError, TransientModelError

    assert issubclass(FatalModelError, ModelError)
    assert issubclass(TransientModelError, ModelError)
    assert issubclass(ModelError, RunError)
    assert issubclass(RetrievalError, RunError)
    assert issubclass(UserError, LivemedError)
    assert UserError("x").exit_code == 2
    assert RunError("x").exit_code == 1


def test_unknown_name_suggests_close_matches_or_lists_known() -> None:
    error = UnknownNameError("source", "pubmd", ["pubmed", "europepmc", "files"])
    assert "did you mean 'pubmed'" in str(error)
    far = UnknownNameError("source", "zzz", ["pubmed", "files"])
    assert "known: files, pubmed" in str(far)


def test_input_and_dependency_errors_say_where_and_how() -> None:
    assert str(InputFileError("a.jsonl", "bad", line=3)) == "a.jsonl:3: bad"
    assert "pip install 'livemed[postgres]'" in str(MissingDependencyError("psycopg", "postgres"))


# Every exception class of every livemed module that imports here: (name, its base's name, whether it
# is a LivemedError), in a subprocess, so importing every module leaves this one's sys.modules alone.
_CLASSES = """
import importlib, json, pkgutil
import livemed
from livemed.errors import LivemedError
for info in pkgutil.walk_packages(livemed.__path__, "livemed."):
    try:
        importlib.import_module(info.name)
    except ImportError:  # an optional extra that is not installed
        pass
seen, todo = [], [BaseException]
while todo:
    for sub in todo.pop().__subclasses__():
        todo.append(sub)
        if sub.__module__.split(".")[0] == "livemed":
            seen.append((sub.__name__, sub.__bases__[0].__name__, issubclass(sub, LivemedError)))
print(json.dumps(sorted(set(seen))))
"""


def _drawn_tree(doc: str) -> dict[str, str | None]:
    """Each class of the tree drawn in `doc`'s first code block, with its parent (the root's: None)."""
    block = doc.split("```")[1]
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in block.splitlines():
        match = re.match(r"^([ │├└─]*)([A-Z]\w*Error)\b", line)
        if match is None:
            continue
        depth = len(match.group(1)) // 4
        del path[depth:]
        parents[match.group(2)] = path[-1] if path else None
        path.append(match.group(2))
    return parents


def test_the_tree_in_errors_py_shows_every_exception_class_livemed_defines() -> None:
    done = subprocess.run([sys.executable, "-c", _CLASSES], capture_output=True, text=True, check=True)
    classes = json.loads(done.stdout)
    drawn = _drawn_tree(errors.__doc__ or "")
    ours = {name: base for name, base, livemed_error in classes if livemed_error}
    assert drawn == {**ours, "LivemedError": None}  # each at its place, and nothing drawn that is gone
    others = [name for name, _, livemed_error in classes if not livemed_error]
    assert others, "the other exception classes were not found"
    assert [name for name in others if f"`{name}`" not in (errors.__doc__ or "")] == []
