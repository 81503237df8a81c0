"""The contamination-only report for scores read from a file (`livemed contamination --scores`).

One self-contained HTML file like `livemed report`'s, rendered with the same environment, macros,
stylesheet, script and Content-Security-Policy: the contamination summary, chart and table, and
the input's provenance (file name, sha256, rows read, rows left out and why).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from livemed import __version__
from livemed.analysis.contamination import AnalysisSettings, ContaminationResult
from livemed.analysis.external import ExternalScores
from livemed.analysis.table_files import clean_json
from livemed.records import utcnow
from livemed.reports.charts import Chart, contamination_chart
from livemed.reports.html import render_page, write_page

TEMPLATE = "external.html.j2"


@dataclass
class ExternalReport:
    title: str
    scores: ExternalScores
    result: ContaminationResult
    settings: AnalysisSettings
    cutoffs_file: str | None = None
    generated_at: datetime = field(default_factory=utcnow)
    version: str = __version__

    @property
    def chart(self) -> Chart:
        return contamination_chart(self.result.rows)

    @property
    def models(self) -> int:
        return len({r.model for r in self.scores.rows})

    @property
    def items(self) -> int:
        return len({r.case_id for r in self.scores.rows})


def page_data(data: ExternalReport) -> dict[str, Any]:
    """The machine-readable summary embedded in the page: the contamination summary and the input."""
    summary: dict[str, Any] = clean_json(
        {
            "contamination": data.result.summary.model_dump(mode="json"),
            "input": data.scores.context(),
            "generated_at": data.generated_at.isoformat(),
            "version": data.version,
        }
    )
    return summary


def render_external(data: ExternalReport) -> str:
    return render_page(TEMPLATE, data, page_data(data))


def write_external(data: ExternalReport, path: Path) -> Path:
    return write_page(render_external(data), path)
