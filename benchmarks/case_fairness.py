"""Are the cases fair to the candidate? `livemed cases audit`'s four figures, before and after.

Three stores are audited with this checkout's audit (`livemed.analysis.fairness`, the code behind
`livemed cases audit`):

- **demo, before**: `livemed demo` as the code at `--before REV` (default dff80f4, main before issue 32)
  curates and writes rubrics, run from a `git archive` of that revision's `src/` with this venv;
- **demo, after**: `livemed demo` as this checkout runs it;
- **fixtures**: the Europe PMC full-text case report and the Stack Exchange thread in `tests/fixtures`
  (written for livemed in the shape of real replies; see its README), screened by the offline curation
  baseline and given rubrics by `offline/rules`, as `benchmarks/leak_threshold.py --drafts` screens them.

For each it prints the four figures (criteria whose context the candidate sees, cases with a leak,
decisive values required, omission negatives) with their counts, and how long the audit took (three
runs: min, median, max; the audit reads records only).

    .venv/bin/python benchmarks/case_fairness.py [--before REV]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from leak_threshold import source_docs  # benchmarks/ is on the path of a script run
from livemed.analysis.fairness import FairnessAudit, audit_cases, stored_pairs
from livemed.config import Thresholds
from livemed.curate.baseline import CurationBaseline
from livemed.curate.screener import Screener
from livemed.domains import medical
from livemed.models import LLM, Engine
from livemed.records import Case, Rubric
from livemed.rubrics.rules import RuleWriter
from livemed.rubrics.write import write_rubric
from livemed.store import Store

ROOT = Path(__file__).resolve().parents[1]
MAX_LEAK = Thresholds().answer_leak


def demo_store(folder: Path, src: Path | None) -> Path:
    """`livemed demo --out folder/project` with the livemed of `src` (this checkout's when None)."""
    env = {**os.environ, "LIVEMED_CACHE_DIR": str(folder / "cache")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    command = [
        sys.executable,
        "-c",
        "from livemed.cli import main; main()",
        "demo",
        "--out",
        str(folder / "project"),
    ]
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    return folder / "project" / "livemed.db"


def revision_src(revision: str, folder: Path) -> Path:
    """The `src/` folder of `revision`, unpacked under `folder`."""
    archive = subprocess.run(["git", "archive", revision, "src"], cwd=ROOT, check=True, capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def audit_store(path: Path) -> tuple[FairnessAudit, list[float]]:
    times, audit = [], None
    for _ in range(3):
        with Store(path) as store:
            start = time.perf_counter()
            audit = audit_cases(stored_pairs(store), medical(), max_leak=MAX_LEAK)
            times.append(time.perf_counter() - start)
    assert audit is not None
    return audit, times


async def fixture_pairs() -> list[tuple[Case, Rubric | None]]:
    """The two fixture documents screened by the offline baseline, each with an offline/rules rubric."""
    pairs: list[tuple[Case, Rubric | None]] = []
    async with Engine() as engine:
        screener = Screener(LLM(engine, CurationBaseline(), stage="screener"))
        for doc in source_docs()[-2:]:
            case = await screener.screen(doc)
            if isinstance(case, Case):
                (written,) = await write_rubric(case, RuleWriter())
                pairs.append((case, written if isinstance(written, Rubric) else None))
    return pairs


def show(title: str, audit: FairnessAudit, times: list[float] | None = None) -> None:
    timing = ""
    if times:
        low, mid, high = min(times), statistics.median(times), max(times)
        timing = f"; audit {mid * 1000:.0f} ms (min {low * 1000:.0f}, max {high * 1000:.0f}, 3 runs)"
    print(f"\n{title}: {len(audit.cases)} cases, {len(audit.rubrics)} with a rubric{timing}")
    for figure in audit.figures():
        share = "-" if figure.share is None else f"{figure.share:.1%}"
        met = {True: "met", False: "MISSED", None: "reported"}[figure.met]
        print(f"  {figure.check:<50} {figure.count:>5} of {figure.n:<5} {figure.unit:<10} {share:>7}  {met}")
    for case in audit.unfair()[:12]:
        print(f"    {case.case_id}: " + "; ".join([*case.unseen, *case.leaks, *case.omissions])[:200])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="dff80f4", help="the revision whose demo is 'before'")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; answer_leak {MAX_LEAK}")
    with tempfile.TemporaryDirectory(prefix="case-fairness-") as tmp:
        before = Path(tmp, "before")
        before.mkdir()
        show(
            f"demo, before ({args.before})",
            *audit_store(demo_store(before, revision_src(args.before, before))),
        )
        after = Path(tmp, "after")
        after.mkdir()
        show("demo, after (this checkout)", *audit_store(demo_store(after, None)))
    pairs = asyncio.run(fixture_pairs())
    show(
        "fixtures (Europe PMC case report, Stack Exchange thread)",
        audit_cases(pairs, medical(), max_leak=MAX_LEAK),
    )


if __name__ == "__main__":
    main()
