"""How long the analyses and the report take on a realistic study (run by hand; sized for 2 cores).

    .venv/bin/python benchmarks/analysis.py [--cases 1000] [--models 8]

Prints wall-clock seconds for: the leaderboard (bootstrap per model), the contamination analysis
(bootstrap + permutation + drift control per model), monthly trends, and building + rendering the
HTML report from a SQLite store, plus the report's size.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.analysis.builders import day, study

from livemed.analysis.contamination import AnalysisSettings, analyse
from livemed.analysis.cutoffs import CutoffEntry
from livemed.analysis.inputs import CaseScore
from livemed.analysis.leaderboard import leaderboard
from livemed.analysis.trends import monthly
from livemed.reports.build import build_report
from livemed.reports.html import render_html
from livemed.store import Store


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn()
    print(f"{label:<48} {time.perf_counter() - start:7.2f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--store-cases", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = [
        CaseScore(f"fake/m{m}", f"c{i}", float(rng.random()), published=day(i % 600))
        for m in range(args.models)
        for i in range(args.cases)
    ]
    registry = {f"m{m}": CutoffEntry(cutoff=date(2024, 3 + m, 1), source="bench") for m in range(args.models)}
    settings = AnalysisSettings()  # 2000 bootstrap resamples, 5000 permutations
    print(f"{args.cases} cases x {args.models} models = {len(rows)} scores")
    timed("leaderboard (2000 resamples per model)", lambda: leaderboard(rows))
    timed("contamination (bootstrap, permutation, drift, BH)", lambda: analyse(rows, registry, settings))
    timed("trends (bootstrap per model-month)", lambda: monthly(rows))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        records = study(n_cases=args.store_cases)
        timed(
            f"store.put of a {args.store_cases}-case, 3-model study ({len(records)} records)",
            lambda: store.put(records),
        )
        data = timed(
            "build_report (reads the store, runs every analysis)",
            lambda: build_report(store, {}, max_cases=100),
        )
        html = timed("render_html (100 cases in the browser)", lambda: render_html(data))
        print(f"{'report size':<48} {len(html.encode()) / 1e6:7.2f} MB")
        store.close()


if __name__ == "__main__":
    main()
