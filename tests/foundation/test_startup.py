"""Start-up: heavy modules are imported only by the commands that use them."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("openai", "aiohttp", "numpy", "scipy", "sklearn", "bm25s", "lxml", "jinja2", "sqlalchemy")


def imported_after(code: str) -> set[str]:
    script = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_version_answers_before_typer_or_any_command_is_imported() -> None:
    found = imported_after("from livemed.cli import main\nmain(['--version'])")
    assert not found & {"typer", "rich", "pydantic", *HEAVY}


def test_every_command_registered_without_a_heavy_module() -> None:
    found = imported_after(
        "from livemed.cli import app\nassert any(c.name == 'eval' for c in app.registered_commands)"
    )
    assert not found & set(HEAVY)


def test_the_version_is_printed() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from livemed.cli import main; main(['--version'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("livemed ")


def test_the_streaming_stages_load_without_numpy_or_scipy() -> None:
    # `livemed eval` imports these before its first request; scoring (NumPy, SciPy) comes after.
    found = imported_after("import livemed.live.stream\nfrom livemed.answer.stage import answer_all")
    assert not found & {"numpy", "scipy"}
    assert "numpy" in imported_after("from livemed.score.stage import score_all")  # the check can fail
