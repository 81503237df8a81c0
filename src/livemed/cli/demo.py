"""`livemed demo`: the whole pipeline, offline, on the bundled demo data.

The demo is a script of real `livemed` commands run in-process against a fresh project folder
(its own livemed.toml and SQLite store), so every step prints exactly what the same command prints
when a user runs it, and the folder can be explored afterwards with the same commands.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import time
from pathlib import Path

import typer
from rich.panel import Panel
from rich.rule import Rule

from livemed.cli.context import console
from livemed.cli.demo_summary import print_simulations
from livemed.cli.root import app
from livemed.common.atomic import write_text
from livemed.config import NAMED_CORPORA
from livemed.errors import LivemedError, RunError, UserError

DEMO_MODELS = ("offline/reference", "offline/retrieval", "offline/unsafe", "offline/empty")
SIMULATIONS = ("offline/memorised", "offline/drift-control")
JUDGE = "offline/lexical"


def demo_config(evidence: str) -> str:
    """The demo project's livemed.toml: no absolute path into this installation (the bundled evidence is
    `demo` by name, the store and tables are relative to the file), so the folder survives a reinstall
    and a move."""
    from livemed.demo import CONTROL_CUTOFF, SIMULATED_CUTOFF

    return f"""\
# livemed demo project: bundled demo data (written by the livemed team; not real patients),
# offline baseline models, a SQLite store beside this file.
store = "livemed.db"
# Harvest window start: the demo data runs from 2024-01 to 2026-10.
cutoff = 2024-01-01

[curate]
evidence = {json.dumps(evidence)}

[analysis]
# SIMULATED training cutoffs ({SIMULATED_CUTOFF.isoformat()}; drift control {CONTROL_CUTOFF.isoformat()}):
# not real training cutoffs. offline/memorised is a simulation that answers the cases published
# by its cutoff from the reference advice; the contamination view should flag it, and not the others.
cutoffs = "demo-cutoffs.toml"
out_dir = "results"
report = "results/report.html"
"""


def demo_cutoffs() -> str:
    """The demo project's cutoff file: every entry is a simulation's, and its source says so."""
    from livemed.demo import CONTROL_CUTOFF, SIMULATED_CUTOFF

    sources = {
        "offline/memorised": "simulation: livemed demo; offline/memorised answers the cases published on or "
        "before this date from their reference advice (it 'memorised' them) and the rest by retrieval",
        "offline/drift-control": "simulation: livemed demo drift control; retrieval answers, with a cutoff "
        "declared after every demo case",
    }
    entries = []
    for model in (*DEMO_MODELS, *SIMULATIONS):
        cutoff = CONTROL_CUTOFF if model == "offline/drift-control" else SIMULATED_CUTOFF
        source = sources.get(model, "simulation: livemed demo; an illustrative date for an offline baseline")
        entries.append(f'[models."{model}"]\ncutoff = {cutoff.isoformat()}\nsource = "{source}"\n')
    return "# livemed demo: SIMULATED cutoffs (not real training cutoffs)\n\n" + "\n".join(entries)


def steps(evidence: str) -> list[tuple[str, list[str]]]:
    """(what it does, the livemed command) for each demo step."""
    answers = [
        ("Answer: the gold advice, an upper bound", ["answer", "--model", "offline/reference"]),
        (
            "Answer: top BM25 evidence passages",
            ["answer", "--model", "offline/retrieval", "--evidence", evidence],
        ),
        (
            "Answer: the gold advice plus one contraindicated action (breaks a negative criterion)",
            ["answer", "--model", "offline/unsafe"],
        ),
        ("Answer: nothing at all, a lower bound", ["answer", "--model", "offline/empty"]),
        (
            "SIMULATION: a model that memorised the cases published before its declared cutoff",
            ["answer", "--model", "offline/memorised", "--evidence", evidence],
        ),
        (
            "SIMULATION: a drift control (retrieval, cutoff declared after every case)",
            ["answer", "--model", "offline/drift-control", "--evidence", evidence],
        ),
    ]
    taxonomy = ["taxonomy", "--classifier", "offline/heuristic", "--k", "5"]
    for model in DEMO_MODELS:
        taxonomy += ["--model", model]
    return [
        ("Harvest the bundled demo source, with pre-filters", ["harvest", "--source", "demo"]),
        ("Curate: Screener → Validator → Controller (rule-based baselines)", ["curate"]),
        (
            "Rubrics: bipolar, weighted criteria from each case's advice",
            ["rubrics", "--writer", "offline/rules"],
        ),
        *answers,
        ("Grade every criterion (lexical baseline grader)", ["grade", "--judge", JUDGE]),
        ("Score: clip(met weights / positive weights, 0, 1)", ["scores", "--judge", JUDGE]),
        ("Contamination: full set vs post-cutoff cases (simulated cutoffs)", ["contamination"]),
        ("Error taxonomy of the lowest-scoring answers (heuristic)", taxonomy),
        ("Curation funnel of the whole store, and every rejection by reason", ["funnel"]),
        (
            "Leaderboard with 95% bootstrap intervals (memorised and drift-control are simulations)",
            ["leaderboard"],
        ),
        ("Report: one self-contained HTML file", ["report", "--title", "livemed demo report"]),
    ]


NEXT_STEPS = """\
[bold]Explore this run[/]
  cd {folder}
  livemed store info
  livemed leaderboard --compare offline/reference --compare offline/retrieval

[bold]A real run[/] (see examples/ for a weekly livemed.toml and walkthrough)
  livemed init --cutoff 2025-06-30
  livemed harvest --source europepmc --since 2025-06-30 --limit 200      # or --source pubmed
  livemed evidence fetch medquad                     # the MedQuAD evidence corpus, downloaded once
  livemed curate --model vllm/Qwen/Qwen2.5-72B-Instruct --evidence medquad
  livemed rubrics --writer vllm/Qwen/Qwen2.5-72B-Instruct
  livemed answer --model openai/gpt-4o-mini          # key from $OPENAI_API_KEY (api_key_env in livemed.toml)
  livemed grade --judge vllm/Qwen/Qwen2.5-72B-Instruct
  livemed scores --judge vllm/Qwen/Qwen2.5-72B-Instruct && livemed report"""


@app.command()
def demo(
    out: Path = typer.Option(
        Path("livemed-demo"), "--out", metavar="DIR", help="Project folder for the demo run."
    ),
    evidence: str | None = typer.Option(
        None,
        "--evidence",
        metavar="FILE|NAME",
        help="Evidence corpus (JSONL or MedQuAD, or `medquad` once fetched), e.g. passages.jsonl, instead of "
        "the bundled demo set.",
    ),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the folder first and start over."),
) -> None:
    """Run the whole pipeline offline on bundled demo data and write an HTML report."""
    corpus = _corpus(evidence)
    folder = out.resolve()
    _check_demo_folder(folder)
    if fresh and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / MARKER, "made by `livemed demo`; `livemed demo --fresh` may delete this folder\n")
    config = folder / "livemed.toml"
    store = folder / "livemed.db"
    write_text(config, demo_config(corpus))
    write_text(folder / "demo-cutoffs.toml", demo_cutoffs())
    console.print(
        Panel.fit(
            f"livemed demo: the whole pipeline on bundled demo data, offline.\nProject folder: {folder}",
            border_style="cyan",
        )
    )
    started = time.perf_counter()
    plan = steps(corpus)
    for number, (title, argv) in enumerate(plan, start=1):
        console.print(Rule(f"[bold]{number}/{len(plan)}[/] {title}", align="left"))
        console.print(f"$ livemed {shlex.join(argv)}", style="dim", markup=False)
        _run(["--config", str(config), "--store", str(store), *argv])
        if argv[0] == "contamination":
            print_simulations(folder / "results" / "contamination.json")
    report = folder / "results" / "report.html"
    console.print(Rule())
    console.print(f"finished in {time.perf_counter() - started:.0f} s; report: [bold]{report}[/]")
    console.print(f"open it in a browser: file://{report}")
    console.print(NEXT_STEPS.format(folder=folder))
    hint = _activation_hint()
    if hint:
        console.print(hint)


MARKER = ".livemed-demo"


def _corpus(evidence: str | None) -> str:
    """What the demo's steps and livemed.toml name as evidence: `demo` (the bundled passages, by name),
    `medquad`, or the absolute path of the user's own corpus file."""
    from livemed.evidence.factory import resolve_evidence

    if evidence is None or evidence in NAMED_CORPORA:
        resolve_evidence(evidence or "demo")  # `medquad` not fetched yet: its one-line error now
        return evidence or "demo"
    chosen = resolve_evidence(evidence)
    if not chosen.exists():
        raise UserError(f"evidence corpus {evidence} does not exist")
    return str(chosen.resolve())


def _check_demo_folder(folder: Path) -> None:
    """The demo writes (and --fresh deletes) only an empty folder or one an earlier demo made."""
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} exists and is not a folder; choose another --out")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).exists():
        raise UserError(f"{folder} is not empty and was not made by `livemed demo`; choose another --out")


def _activation_hint() -> str | None:
    """How to get `livemed` on PATH when this one was started by its full path (e.g. .venv/bin/livemed)."""
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    found = shutil.which("livemed")
    if here is None or here.name != "livemed" or (found and Path(found).resolve() == here):
        return None
    activate = here.parent / "activate"
    if activate.exists():
        return f"[dim](these commands need livemed on your PATH: source {activate})[/]"
    return f"[dim](these commands need livemed on your PATH: it is {here})[/]"


def _run(argv: list[str]) -> None:
    """Run one livemed command in-process; a failing step stops the demo with its message."""
    step = " ".join(argv[4:])
    try:
        code = app(args=argv, prog_name="livemed", standalone_mode=False)
    except LivemedError:
        raise
    except Exception as exc:  # a usage error in a step is a bug in the demo script
        raise RunError(f"demo step `livemed {step}` failed: {exc}") from exc
    if code not in (0, None):
        raise RunError(f"demo step `livemed {step}` exited with code {code}")
