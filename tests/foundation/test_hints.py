"""Every `livemed …` command the CLI prints as advice runs as printed (or parses, where it cannot run here).

The hints are found in the sources, not typed here: every string livemed may print (docstrings, `help=`
and `description=` texts aside) is searched for a command in backticks, after "run"/"try"/"with"/"see",
or on a line of its own (the demo's closing list). Each one found must be in HINTS, saying how it is
checked, and each entry of HINTS must still be found, so a new or reworded hint fails here until it is
checked. `{name}` in a template is a value filled in when it is printed: HINTS gives it a real one.
"""

from __future__ import annotations

import ast
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer

from tests.conftest import REPO_ROOT
from tests.shell_docs import program_env, run_shell, tail

SRC = REPO_ROOT / "src" / "livemed"
_HINT = re.compile(
    r"`(?P<quoted>livemed [a-z][^`]*)`?"
    r"|\b(?:run|try|use it with|with|see):? (?P<said>livemed [a-z][^`;(\n]*?)(?= first\b|[`;(\n]|$)"
    r"|^[ \t]+(?P<listed>livemed [a-z].*)$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Hint:
    """How a printed command is checked: `run` (exit 0 on a copy of the demo project, or in an empty
    folder), `parse` (the command line parses; `why` it is not run), or `names` (it names a command in
    prose, which must exist). `broken`: a known bug, why it fails now (the test is a strict xfail)."""

    check: str
    why: str = ""
    values: dict[str, str] = field(default_factory=dict)
    empty_folder: bool = False
    broken: str = ""
    before: tuple[str, ...] = ()  # what the condition that prints it leaves done (run first)


NEEDS_KEY = "needs a model server or an API key"
NETWORK = "needs the network"
HINTS: dict[str, Hint] = {
    # analysis: not ranked / no scores
    "livemed scores --judge {j}": Hint("run", values={"j": "offline/lexical"}),
    "livemed scores --judge {j} --convention {convention} --policy {policy}{option}": Hint(
        "run",
        values={
            "j": "offline/lexical",
            "convention": "livemed",
            "policy": "strict",
            "option": " --rubric-version latest-approved",
        },
    ),
    "livemed grade --judge {j}{option}": Hint(
        "run", values={"j": "offline/lexical", "option": " --rubric-version latest-approved"}
    ),
    "livemed grade --judge {judge} --rubric-version latest-approved": Hint(
        "run", values={"judge": "offline/lexical"}
    ),
    "livemed grade --judge {j}{again}": Hint(
        "run", values={"j": "offline/lexical", "again": " --retry-failures"}
    ),
    "livemed grade --judge {model} --retry-failures": Hint("run", values={"model": "offline/lexical"}),
    "livemed judges certify --grader {model}{extra}": Hint(
        "run", values={"model": "offline/lexical", "extra": " --mode batched"}
    ),
    # no store, no config, nothing harvested
    "livemed demo": Hint("run", empty_folder=True),
    "livemed demo --fresh": Hint("run"),
    "livemed init": Hint("run", empty_folder=True),
    "livemed harvest --source demo": Hint("run"),
    "livemed import --help": Hint("run"),
    "livemed curate --help": Hint("run"),
    "livemed export -k rejection rejections.jsonl": Hint("run"),
    "livemed rubrics --writer offline/rules": Hint("run"),
    "livemed answer --model offline/reference": Hint("run"),
    "livemed answer --model offline/retrieval --evidence demo": Hint("run"),
    "livemed judges build --dataset pico": Hint("run"),
    "livemed judges run --judge offline/always-a": Hint(
        "run", before=("livemed judges build --dataset pico",)
    ),
    "livemed judges run --judge {missing[0]} --mode {mode}": Hint(
        "parse",
        "names a trained judge of `judges compare`",
        values={"missing[0]": "hf/runs/judge/sft", "mode": "pairwise"},
    ),
    # the demo's closing list
    "livemed store info": Hint("run"),
    "livemed leaderboard --compare offline/reference --compare offline/retrieval": Hint("run"),
    "livemed init --cutoff 2025-06-30": Hint("run", empty_folder=True),
    "livemed harvest --source europepmc --since 2025-06-30 --limit 200": Hint("parse", NETWORK),
    "livemed curate --model vllm/Qwen/Qwen2.5-72B-Instruct --evidence medquad": Hint("parse", NEEDS_KEY),
    "livemed rubrics --writer vllm/Qwen/Qwen2.5-72B-Instruct": Hint("parse", NEEDS_KEY),
    "livemed answer --model openai/gpt-4o-mini": (Hint("parse", NEEDS_KEY)),
    "livemed grade --judge vllm/Qwen/Qwen2.5-72B-Instruct": Hint("parse", NEEDS_KEY),
    "livemed scores --judge vllm/Qwen/Qwen2.5-72B-Instruct && livemed report": Hint(
        "parse", "the real run's judge: no scores of it in a test store"
    ),
    # evidence
    "livemed evidence fetch medquad": Hint("parse", NETWORK),
    "livemed curate --evidence medquad": Hint(
        "parse", "printed after a MedQuAD download, which needs the network"
    ),
    "livemed curate --evidence {result.path}": Hint(
        "parse", "printed after a MedQuAD download", values={"result.path": "medquad.jsonl"}
    ),
    # training
    "livemed judges run --judge hf/{final}": Hint(
        "parse", "needs livemed[train] and a trained checkpoint", values={"final": "runs/judge/grpo"}
    ),
    # review: the app's refusal of a request without a session (NAME, a placeholder, is a valid name)
    "livemed review invite NAME": Hint("run"),
    # scores --corrected without an audit sample of its grader
    "livemed review sample --judge {judge} --size 300": Hint("run", values={"judge": "offline/lexical"}),
    # named in prose (livemed.toml's comments, a model card, the demo's refusal)
    "livemed evidence fetch": Hint("names", "livemed.toml's comment on where the MedQuAD copy comes from"),
    "livemed sources": Hint("run"),
    "livemed update": Hint("run"),
    "livemed schedule": Hint("names", "livemed.toml's comment on what [update] drives"),
    "livemed leaderboard": Hint("run"),
    "livemed judges": Hint("names", "a trained judge's model card names the command group"),
}
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def printed_hints() -> dict[str, list[str]]:
    """Every command template in a string livemed may print, with where it is (file:line)."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for text, line in _printable_strings(ast.parse(path.read_text(encoding="utf-8"))):
            for match in _HINT.finditer(text):
                template = re.split(r"\s+#\s", next(g for g in match.groups() if g))[0].strip()
                found.setdefault(template, []).append(f"{path.relative_to(SRC)}:{line}")
    return found


def _printable_strings(tree: ast.Module) -> list[tuple[str, int]]:
    """The module's string constants and f-strings (with `{expression}` for each value), leaving out
    docstrings and other string statements, `help=`/`description=` texts and an f-string's parts."""
    left_out = {id(node) for node in ast.walk(tree) for node in _not_printed(node)}
    strings = []
    for node in ast.walk(tree):
        if id(node) in left_out:
            continue
        if isinstance(node, ast.JoinedStr):
            strings.append((_render(node), node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append((node.value, node.lineno))
    return strings


def _not_printed(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return [node.value]
    if isinstance(node, ast.keyword) and node.arg in ("help", "description"):
        return list(ast.walk(node.value))
    if isinstance(node, ast.JoinedStr):
        return list(node.values)
    return []


def _render(node: ast.JoinedStr) -> str:
    return "".join(
        v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"  # type: ignore[attr-defined, misc]
        for v in node.values
    )


def test_every_printed_hint_is_checked_and_every_check_is_printed() -> None:
    found = printed_hints()
    unchecked = {t: where for t, where in found.items() if t not in HINTS}
    assert unchecked == {}, "a printed command no test checks: add it to HINTS"
    assert sorted(set(HINTS) - set(found)) == [], "in HINTS but no longer printed: remove or update it"


def _filled(template: str, hint: Hint) -> str:
    return _PLACEHOLDER.sub(lambda m: hint.values[m[1]], template)


def _params(check: str) -> list[object]:
    return [
        pytest.param(
            t, h, id=t[:60], marks=[pytest.mark.xfail(strict=True, reason=h.broken)] if h.broken else []
        )
        for t, h in HINTS.items()
        if h.check == check
    ]


@pytest.mark.parametrize(("template", "hint"), _params("run"))
def test_a_printed_hint_runs_as_printed(
    template: str, hint: Hint, demo_project: Path, tmp_path: Path
) -> None:
    cwd = tmp_path / "empty"
    if hint.empty_folder:
        cwd.mkdir()
    else:
        shutil.copytree(demo_project, cwd)
    env = program_env(tmp_path / "cache")
    for command in hint.before:
        assert run_shell(command, cwd, env).returncode == 0, command
    done = run_shell(_filled(template, hint), cwd, env)
    assert done.returncode == 0, tail(done)


@pytest.mark.parametrize(("template", "hint"), _params("parse"))
def test_a_printed_hint_that_cannot_run_here_parses(template: str, hint: Hint) -> None:
    assert hint.why
    for command in _filled(template, hint).split("&&"):
        argv = re.split(r"\s#\s", command, maxsplit=1)[0].split()
        assert argv[0] == "livemed"
        usage_error(argv[1:])


@pytest.mark.parametrize(("template", "hint"), _params("names"))
def test_a_command_named_in_prose_exists(template: str, hint: Hint) -> None:
    assert hint.why
    _resolve(template.split()[1:])


def test_the_parse_check_fails_on_a_usage_error() -> None:
    """The check `parse` hints get is not vacuous: what the program refuses with exit 2, it refuses."""
    with pytest.raises(Exception, match="Missing parameter: model"):
        usage_error(["answer"])
    with pytest.raises(Exception, match="No such option"):
        usage_error(["store", "info", "--no-such-option"])
    with pytest.raises(AssertionError, match="no command"):
        usage_error(["no-such-command"])
    usage_error(["answer", "--model", "offline/reference"])


def usage_error(argv: list[str]) -> None:
    """Parse `livemed ARGV` as the program does, without running it; a usage error (exit 2) raises."""
    ctx, command, rest = _resolve(argv)
    assert not _is_group(command), f"`livemed {' '.join(argv)}` names a group, not a command"
    with command.make_context(ctx.info_name, rest, parent=ctx.parent):
        pass


def _resolve(argv: list[str]) -> tuple[Any, Any, list[str]]:
    """The command `argv` names (through its groups), its context, and the arguments left for it
    (typer's own copy of click: its command and context classes, as the program has them)."""
    from livemed.cli import app

    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name="livemed")
    rest = list(argv)
    while _is_group(command) and rest and not rest[0].startswith("-"):
        name = rest.pop(0)
        sub = command.get_command(ctx, name)  # type: ignore[attr-defined]
        assert sub is not None, f"livemed has no command {name!r} ({' '.join(argv)})"
        command, ctx = sub, sub.context_class(sub, parent=ctx, info_name=name)
    return ctx, command, rest


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def test_the_not_ranked_hint_printed_by_the_leaderboard_runs_and_ranks(
    demo_project: Path, tmp_path: Path
) -> None:
    """The condition itself: answers nobody graded yet; the leaderboard's hint, run as printed, fixes it."""
    project = tmp_path / "project"
    shutil.copytree(demo_project, project)
    env = program_env(tmp_path / "cache")
    assert run_shell("livemed answer --model offline/empty --samples 2", project, env).returncode == 0
    refused = run_shell("livemed leaderboard", project, env)
    assert refused.returncode == 1, tail(refused)
    printed = [m["quoted"] for m in _HINT.finditer(refused.stderr) if m["quoted"]]
    assert printed == ["livemed grade --judge offline/lexical", "livemed scores --judge offline/lexical"]
    for command in printed:
        done = run_shell(command, project, env)
        assert done.returncode == 0, tail(done)
    ranked = run_shell("livemed leaderboard", project, env)
    assert ranked.returncode == 0, tail(ranked)


def test_every_extra_a_missing_dependency_names_is_in_pyproject() -> None:
    """`pip install 'livemed[EXTRA]'` (MissingDependencyError's advice) names an extra that exists."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    named = {
        node.args[1].value
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "MissingDependencyError"
        and isinstance(node.args[1], ast.Constant)
    }
    assert named >= {"postgres", "train", "ray", "dense"}
    assert sorted(named - set(extras["optional-dependencies"])) == []  # type: ignore[type-var]
