"""The README quick start is the contract with new users: two lines, and CI runs the second."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT


def _quick_start_lines() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)]


def test_quick_start_has_exactly_two_one_line_commands() -> None:
    lines = _quick_start_lines()
    assert len(lines) == 2
    assert all("\n" not in line for line in lines)
    assert lines[0].endswith("livemed demo")


def test_ci_runs_both_readme_lines() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    demo, tests = _quick_start_lines()
    assert f"DEMO_LINE='{demo}'" in ci
    assert f"TEST_LINE='{tests}'" in ci
