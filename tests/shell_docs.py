"""The shell blocks of README.md and docs/*.md, and running `livemed` command lines as a user would.

A block is a ```bash, ```sh or ```console fence. In a console block the commands are the lines after `$ `
(the rest is output); a line ending in a backslash goes on with the next. An HTML comment
`<!-- not-run: REASON -->` just before a block (blank lines allowed between) says why it is not run.
Commands run through bash in a project folder, with the `livemed` of this Python's environment first on
PATH (PYTHONPATH is inherited, so a worktree's sources are what runs).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO_ROOT

SHELL_LANGUAGES = ("bash", "sh", "console")
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>(?:(?!-->).)*?)\s*-->", re.DOTALL)
_MARKER_LAST = re.compile(NOT_RUN.pattern + r"\Z", re.DOTALL)
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence
    lang: str
    body: str
    not_run: str | None  # the marker's reason, when the block is marked

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def shell_blocks(path: Path) -> list[Block]:
    """Every shell block of one Markdown file, in order, with its not-run marker if it has one."""
    text = path.read_text(encoding="utf-8")
    blocks, previous_end = [], 0
    for fence in _FENCE.finditer(text):
        lang = fence["lang"]
        if lang in SHELL_LANGUAGES:
            line = text.count("\n", 0, fence.start()) + 1
            marker = _MARKER_LAST.search(text[previous_end : fence.start()].rstrip())
            blocks.append(Block(path, line, lang, fence["body"], marker["reason"] if marker else None))
        previous_end = fence.end()
    return blocks


def orphan_markers(path: Path) -> list[str]:
    """Not-run markers that are not right before a shell block (they mark nothing)."""
    text = path.read_text(encoding="utf-8")
    orphans = []
    for marker in NOT_RUN.finditer(text):
        fence = re.match(r"\s*```(?P<lang>[\w-]*)", text[marker.end() :])
        if fence is None or fence["lang"] not in SHELL_LANGUAGES:
            orphans.append(f"{path.relative_to(REPO_ROOT)}:{text.count(chr(10), 0, marker.start()) + 1}")
    return orphans


def commands(block: Block) -> list[str]:
    """The command lines of a block, continuation lines joined, `$ ` prompts and blank lines dropped."""
    lines = block.body.splitlines()
    if block.lang == "console":
        lines = _prompted(lines)
    found: list[str] = []
    pending = ""
    for line in lines:
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip() + " "
            continue
        if pending.strip() and not pending.lstrip().startswith("#"):
            found.append(pending.strip())
        pending = ""
    return found


def _prompted(lines: list[str]) -> list[str]:
    """A console block's input: each `$ ` line and the lines its trailing backslashes carry on to."""
    kept, going_on = [], False
    for line in lines:
        if line.startswith("$ ") or going_on:
            kept.append(line[2:] if line.startswith("$ ") else line)
            going_on = line.rstrip().endswith("\\")
    return kept


# Variables of the test run a user's shell does not have (the store and data the tests point at).
NOT_A_USERS = ("LIVEMED_STORE", "LIVEMED_CONFIG", "LIVEMED_SHARED_DATA", "LIVEMED_TEST_POSTGRES_URL")


def program_env(cache: Path) -> dict[str, str]:
    """The environment a command runs in: this environment's `livemed` first, a private cache folder,
    none of the test run's own variables (NOT_A_USERS)."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_A_USERS}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["LIVEMED_CACHE_DIR"] = str(cache)
    env["COLUMNS"] = "200"
    return env


def run_shell(
    command: str, cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`command` as a user types it, in bash, in `cwd`."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def tail(done: subprocess.CompletedProcess[str], lines: int = 12) -> str:
    out = (done.stdout + done.stderr).strip().splitlines()
    return "\n".join(out[-lines:])
