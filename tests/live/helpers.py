"""A live project folder for the update, schedule and release tests: demo documents as the source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.demo import demo_docs_path, demo_evidence_path
from livemed.records import Answer, Case, Doc, Grade, GradeFailure, Rejection, Rubric, Score
from livemed.store import Store

KEY_ENV = "LIVEMED_LIVE_TEST_KEY"
CANDIDATE = "openai/fake-candidate"
JUDGE = "openai/fake-judge"
PROGRAM = Path(sys.executable).with_name("livemed")


def project(
    folder: Path,
    docs: int = 12,
    *,
    url: str | None = None,
    update: str | None = None,
    skip: int = 0,
) -> Path:
    """A project: the first `docs` demo documents (after `skip`) as the `demo` source, the demo evidence,
    and an `[update]` section (default: offline rubrics, `CANDIDATE` and `JUDGE` at `url`, or offline
    baselines when there is no server)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = demo_docs_path().read_text(encoding="utf-8").splitlines()
    (folder / "docs.jsonl").write_text("\n".join(lines[skip : skip + docs]) + "\n", encoding="utf-8")
    if update is None:
        models = (CANDIDATE, JUDGE) if url else ("offline/reference", "offline/lexical")
        update = f'writer = "offline/rules"\nmodels = ["{models[0]}"]\njudge = "{models[1]}"\n'
    text = [
        'store = "livemed.db"',
        "cutoff = 2024-01-01",
        "[sources.demo]",
        f'path = "{folder / "docs.jsonl"}"',
        "[curate]",
        f'evidence = "{demo_evidence_path()}"',
        "[update]",
        update,
    ]
    for model in (CANDIDATE, JUDGE) if url else ():
        text += [
            f'[models."{model}"]',
            f'base_url = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            "max_concurrency = 4",
            "max_retries = 0",
            f'[prices."{model}"]',
            "input = 0.15",
            "output = 0.6",
        ]
    config = folder / "livemed.toml"
    config.write_text("\n".join(text) + "\n", encoding="utf-8")
    return config


def cli(config: Path, *argv: str) -> Any:
    env = {KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
    return CliRunner(env=env).invoke(app, ["--config", str(config), *argv])


def program_args(config: Path, *argv: str) -> tuple[list[str], dict[str, str]]:
    if not PROGRAM.exists():
        pytest.skip("the livemed program is not installed in this environment")
    env = {**os.environ, KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
    return [str(PROGRAM), "--config", str(config), *argv], env


def program(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    args, env = program_args(config, *argv)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, cwd=config.parent)


def contents(config: Path, store_url: str | None = None) -> dict[str, Any]:
    """What the pipeline stored, without times and run ids (equal for equal work)."""
    with Store(store_url or config.parent / "livemed.db") as store:
        return {
            "docs": sorted(d.id for d in store.iter(Doc)),
            "rejections": sorted(r.id for r in store.iter(Rejection)),
            "cases": sorted((c.id, c.query, tuple(c.advice)) for c in store.iter(Case)),
            "rubrics": sorted((r.id, tuple(c.text for c in r.criteria)) for r in store.iter(Rubric)),
            "answers": sorted((a.id, a.text) for a in store.iter(Answer)),
            "grades": sorted((g.id, g.met) for g in store.iter(Grade)),
            "failures": sorted(f.id for f in store.iter(GradeFailure)),
            "scores": sorted((s.id, s.score) for s in store.iter(Score)),
        }
