"""Lazy command loading: `livemed CMD` imports only CMD's modules, and behaves as with every one loaded."""

from __future__ import annotations

import os
import subprocess
import sys

from typer.testing import CliRunner

from livemed.cli import app
from livemed.cli.application import COMMANDS, HELP_PANELS

COMMAND_MODULES = {m for modules in COMMANDS.values() for m in modules} | {"stage_commands"}
HEAVY = {"numpy", "scipy", "aiohttp", "openai", "sqlalchemy", "jinja2", "pandas", "sklearn"}
ENV = {**os.environ, "COLUMNS": "120"}


def program(*args: str, after: str = "") -> subprocess.CompletedProcess[str]:
    """`livemed ARGS` in a fresh interpreter (nothing preloaded); `after` runs once it returns."""
    code = (
        "import sys\nfrom livemed.cli import main\ntry:\n"
        f"    main({list(args)!r})\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        f"{after}\nsys.exit(code)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=False)


LOADED = (
    "print('LOADED', ' '.join(sorted(m.removeprefix('livemed.cli.') for m in sys.modules"
    " if m.startswith('livemed.cli.'))), file=sys.stderr)\n"
    "print('TOPS', ' '.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)"
)


def loaded(done: subprocess.CompletedProcess[str], tag: str) -> set[str]:
    line = next(x for x in done.stderr.splitlines() if x.startswith(tag + " "))
    return set(line.split()[1:])


def test_the_table_names_every_command_and_the_modules_that_define_it() -> None:
    registered = {}
    for info in app.registered_commands:
        assert info.callback is not None
        registered[info.name or info.callback.__name__.replace("_", "-")] = {info.callback.__module__}
    for group in app.registered_groups:
        assert group.name
        assert group.typer_instance is not None
        registered[group.name] = {
            c.callback.__module__ for c in group.typer_instance.registered_commands if c.callback
        }
    assert set(registered) == set(COMMANDS)
    for name, modules in registered.items():
        assert modules <= {f"livemed.cli.{m}" for m in COMMANDS[name]}, name
    judges = next(g for g in app.registered_groups if g.name == "judges")
    assert judges.typer_instance is not None
    assert {c.callback.__module__ for c in judges.typer_instance.registered_commands if c.callback} == {
        f"livemed.cli.{m}" for m in COMMANDS["judges"]
    }


def test_a_command_imports_only_its_own_modules_and_no_heavy_library() -> None:
    for args, own in (
        (("scores", "--help"), {"score_commands"}),
        (("eval", "--help"), {"eval_command", "stage_commands"}),
        (("leaderboard", "--help"), {"analysis"}),
        (("grade", "--help"), {"stage_commands"}),
    ):
        done = program(*args, after=LOADED)
        assert done.returncode == 0, done.stderr
        assert f"Usage: livemed {args[0]}" in done.stdout
        assert loaded(done, "LOADED") & COMMAND_MODULES == own, args
        assert not loaded(done, "TOPS") & HEAVY, args


def test_the_programs_help_is_the_help_of_the_app_with_every_command_loaded() -> None:
    done = program("--help")
    assert done.returncode == 0
    assert done.stdout == CliRunner(env={"COLUMNS": "120"}).invoke(app, ["--help"]).output
    listed = [
        line.split()[1]
        for line in done.stdout.splitlines()
        if line.startswith("│ ") and len(line.split()) > 2
    ]
    assert set(COMMANDS) <= set(listed)
    for panel, names in HELP_PANELS.items():
        assert panel in done.stdout
        commands = [
            n for n in names if n not in {"evidence", "release", "cases"}
        ]  # groups follow the commands
        assert [n for n in listed if n in commands] == commands  # in the panel's order


def test_a_groups_help_and_an_unknown_command_behave_as_before() -> None:
    """Help is the app's; an unknown command is one line (a usage error, exit 2), as every error."""
    runner = CliRunner(env={"COLUMNS": "120"})
    for args in (["judges", "--help"], []):
        done = program(*args)
        expected = runner.invoke(app, args)
        assert (done.returncode, done.stdout + done.stderr) == (expected.exit_code, expected.output), args
    done = program("evl")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: livemed: No such command 'evl'. Did you mean 'eval'?\n"
    done = program("judges", "nosuch")
    assert (done.returncode, done.stderr) == (2, "error: livemed judges: No such command 'nosuch'.\n")


def test_eval_without_a_window_imports_no_scipy_before_its_first_request() -> None:
    code = (
        "import sys\nfrom livemed.cli.eval_command import _keep\n"
        "assert _keep(None, ['m'], (None, None, False)) is None\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'numpy'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
