"""Every `livemed` line of the shell blocks in README.md and docs/*.md runs, as written, on a demo project.

Each Markdown file's blocks run in order, in one copy of the demo project (`livemed demo`), so a page
that builds on its earlier lines (export, then import; create a release, then export it) runs as a
reader follows it; `../shared/data` is the real data folder beside it. A command that cannot run here
is listed below by its text (its trailing comment left out) with the reason, or its block is marked in
the Markdown with `<!-- not-run: REASON -->`; a listed command that no longer appears in the docs fails.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, shared_data_dir
from tests.shell_docs import (
    Block,
    commands,
    doc_files,
    orphan_markers,
    program_env,
    run_shell,
    shell_blocks,
    tail,
)

NETWORK = "needs the network"
# Commands not run, by their text without the trailing comment, each with why.
NOT_RUN: dict[str, str] = {
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/livemed demo": (
        ".ci/run runs it on a fresh copy of the tracked files (DEMO_LINE, tests/foundation/test_readme.py)"
    ),
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" && .venv/bin/pytest': (
        ".ci/run runs it (TEST_LINE): it is the test suite, this test included"
    ),
    "livemed harvest --source europepmc --since 2025-06-30 --until 2025-09-30 --limit 200": (
        f"{NETWORK} (Europe PMC); tests/sources replay its pages"
    ),
    "livemed harvest -s stackexchange -s pubmed": f"{NETWORK} (Stack Exchange, NCBI)",
    "livemed evidence fetch medquad && livemed curate --evidence medquad": f"{NETWORK}: downloads MedQuAD",
    "livemed curate --model openai/gpt-4o-mini --evidence corpus.jsonl --limit 50 --max-cost 2": (
        "needs an OpenAI API key; corpus.jsonl stands for your evidence corpus"
    ),
    "livemed curate --model vllm/Qwen/Qwen2.5-7B-Instruct --retriever europepmc": (
        f"needs a vLLM server, and {NETWORK} (Europe PMC search)"
    ),
    "livemed curate --model vllm/Qwen/Qwen2.5-72B-Instruct --redo": "needs a vLLM server",
    "livemed eval healthbench.jsonl -m openai/gpt-4.1-mini -m vllm/Qwen/Qwen2.5-7B-Instruct --judge "
    "openai/gpt-4.1 --convention healthbench --json results.json": (
        "needs an OpenAI API key and a vLLM server; healthbench.jsonl is HealthBench's file"
    ),
    "livemed contamination --scores results.csv --cutoffs cutoffs.csv": (
        "results.csv and cutoffs.csv stand for your own files; tests/analysis/test_external_cli.py runs it"
    ),
    "livemed review serve --judge offline/lexical": (
        "serves until Ctrl-C (tests/review/test_review_cli.py starts it and asks it for a page)"
    ),
    "livemed schedule --every 7d": "runs until Ctrl-C or SIGTERM (tests/live test the loop)",
    "livemed schedule --every 6h --runs 4": "waits 6 h between its four updates (tests/live test the loop)",
    "livemed judges run --judge vllm/my-judge --samples 5 --temperature 1.0 --dataset medcalc --limit 200": (
        "needs a vLLM server"
    ),
}
# Commands run in an empty folder of their own instead of the demo project, with why.
IN_EMPTY_FOLDER: dict[str, str] = {
    "livemed init": "it writes livemed.toml, which the demo project already has",
}
# Commands that need an optional package: run when it is installed (CI's ecosystem step has them all).
NEEDS_MODULE: dict[str, str] = {
    "livemed release export 2026-w48 --format parquet --out public/": "pyarrow",
    "livemed release export 2026-w48 --format hf --out hf/ --embargo-days 14": "datasets",
    "livemed release export 2026-w48 --format hf --out hf/": "datasets",
    "livemed release export 2026-w48 --format inspect --out inspect/": "inspect_ai",
    "livemed release verify hf/": "datasets",  # verifies the hf export just above it
}
SHARED = "../shared/data"


def key(command: str) -> str:
    """A command's text without its trailing comment, spaces collapsed: what the lists above name."""
    return " ".join(re.split(r"\s#\s", command, maxsplit=1)[0].split())


def _blocks() -> list[Block]:
    return [block for path in doc_files() for block in shell_blocks(path)]


def _documented() -> set[str]:
    return {key(c) for block in _blocks() if block.not_run is None for c in commands(block)}


def test_every_not_run_marker_marks_a_shell_block() -> None:
    assert [o for path in doc_files() for o in orphan_markers(path)] == []
    marked = [block for block in _blocks() if block.not_run is not None]
    assert marked, "the docs mark some blocks not-run; the marker parser found none"
    assert all(block.not_run.strip() for block in marked if block.not_run is not None)


def test_every_listed_command_is_in_the_docs() -> None:
    documented = _documented()
    for listed in (NOT_RUN, IN_EMPTY_FOLDER, NEEDS_MODULE):
        assert sorted(set(listed) - documented) == [], "listed here but no longer in any unmarked block"


def test_every_command_that_is_not_livemed_says_why() -> None:
    others = sorted(c for c in _documented() if not c.startswith("livemed ") and c not in NOT_RUN)
    assert others == [], "a shell line that is not a livemed command: list it in NOT_RUN with why"


def _pages() -> list[Path]:
    return [path for path in doc_files() if any(b.not_run is None for b in shell_blocks(path))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_the_shell_lines_of_a_page_run_on_a_demo_project(
    page: Path, demo_project: Path, tmp_path: Path
) -> None:
    project = _layout(demo_project, tmp_path)
    env = program_env(tmp_path / "cache")
    failures = []
    for block in shell_blocks(page):
        if block.not_run is not None or _lacks_shared_data(block):
            continue
        for command in commands(block):
            failure = _run(command, block, project, tmp_path, env)
            if failure:
                failures.append(failure)
    assert not failures, "\n\n".join(failures)


def _layout(demo: Path, tmp_path: Path) -> Path:
    """A copy of the demo project, with `../shared/data` beside it when the real data folder exists."""
    project = tmp_path / "project"
    shutil.copytree(demo, project)
    if shared_data_dir().is_dir():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(shared_data_dir().resolve(), target_is_directory=True)
    return project


def _lacks_shared_data(block: Block) -> bool:
    """A block reading ../shared/data is left out (all of it: its lines build on each other) without it."""
    return SHARED in block.body and not shared_data_dir().is_dir()


def _run(command: str, block: Block, project: Path, tmp_path: Path, env: dict[str, str]) -> str | None:
    """Run one documented line; what went wrong, or None."""
    name = key(command)
    if name in NOT_RUN or _missing_module(name):
        return None
    cwd = project
    if name in IN_EMPTY_FOLDER:
        cwd = tmp_path / f"empty-{block.line}"
        cwd.mkdir()
    done = run_shell(command, cwd, env)
    if done.returncode == 0:
        return None
    return f"{block.where}: `{command}` exited {done.returncode}:\n{tail(done)}"


def _missing_module(name: str) -> bool:
    module = NEEDS_MODULE.get(name)
    return module is not None and importlib.util.find_spec(module) is None


def test_the_docs_have_the_blocks_this_test_reads() -> None:
    """The collector finds the README's blocks (a broken fence pattern would make the run test vacuous)."""
    readme = shell_blocks(REPO_ROOT / "README.md")
    assert len(readme) >= 8
    assert "livemed store info" in {key(c) for block in readme for c in commands(block)}
