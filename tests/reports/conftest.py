from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from livemed.analysis.contamination import AnalysisSettings
from livemed.analysis.cutoffs import CutoffEntry, parse_cutoffs
from livemed.analysis.taxonomy import heuristic_label
from livemed.reports.build import ReportData, build_report
from livemed.store import Store
from tests.analysis.builders import CUTOFFS_TOML, study

FAST = AnalysisSettings(resamples=1000, permutations=1000, min_post=5, min_pre=5)


def registry() -> dict[str, CutoffEntry]:
    return parse_cutoffs(CUTOFFS_TOML, "fixture").models


@pytest.fixture
def report_store(tmp_path: Path) -> Iterator[Store]:
    """A small study whose case 0 (and its answers and grades) carry a <script> payload."""
    store = Store(tmp_path / "report.db")
    store.put(study(n_cases=100, script_case=0))
    yield store
    store.close()


@pytest.fixture
def report_data(report_store: Store) -> ReportData:
    from livemed.cli.taxonomy_run import build_items
    from livemed.records import Score

    scores = list(report_store.iter(Score))
    items = build_items(report_store, scores, ["fake/weak"], 5)
    report_store.put([heuristic_label(item) for item in items])
    return build_report(report_store, registry(), settings=FAST, max_cases=100, title="Study <b>42</b>")
