"""Render the report as ONE self-contained HTML file: inline CSS, inline SVG charts, a little inline JS.

Autoescaping is on for every template; no data value is ever marked safe. The only JSON in the page
goes through Jinja's `tojson`, which escapes `<`, `>`, `&` and `'` for a script context. The page's
Content-Security-Policy runs only the page's own script, named by its sha256 hash (`script_hash`,
computed here from the exact text put in the page): no `'unsafe-inline'` for scripts, so even markup
that an escaping bug let through could not run a script.
"""

from __future__ import annotations

import base64
import hashlib
import math
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from livemed.analysis.table_files import clean_json
from livemed.common.atomic import write_text
from livemed.judges.certification import shown
from livemed.judges.figures import Figure
from livemed.judges.tables import figure_lines
from livemed.reports.build import ReportData

TEMPLATE = "report.html.j2"
SCRIPT = "report.js"


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.0%}"


def _pvalue(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _band(value: Any) -> str:
    """The colour of a score pill: low (< 0.4), mid (< 0.7), high, or none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    return "low" if value < 0.4 else "mid" if value < 0.7 else "high"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("livemed.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, pct=_pct, pvalue=_pvalue, band=_band, figure=figure_lines, shown=shown)
    env.tests["figure"] = lambda value: isinstance(value, Figure)
    return env


def page_data(data: ReportData) -> dict[str, Any]:
    """The small machine-readable summary embedded in the page (for scripts and curious readers)."""
    summary: dict[str, Any] = clean_json(
        {
            "leaderboard": [row.model_dump(mode="json") for row in data.leaderboard],
            "contamination": data.contamination.summary.model_dump(mode="json"),
            "generated_at": data.generated_at.isoformat(),
            "version": data.version,
        }
    )
    return summary


def page_script() -> str:
    """The page's own script, exactly as it goes between `<script>` and `</script>`."""
    return (resources.files("livemed.reports") / "templates" / SCRIPT).read_text(encoding="utf-8")


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script: `'sha256-<base64 digest>'`."""
    return f"'sha256-{base64.b64encode(hashlib.sha256(script.encode('utf-8')).digest()).decode('ascii')}'"


def render_page(template_name: str, data: Any, summary: dict[str, Any]) -> str:
    """One self-contained page from `template_name`, with the page's own script and its CSP hash."""
    template = environment().get_template(template_name)
    script = page_script()
    # the script is livemed's own file, not data: it goes in as it is, and only it may run
    return template.render(
        data=data, page_data=summary, script=Markup(script), script_hash=Markup(script_hash(script))
    )


def write_page(html: str, path: Path) -> Path:
    """Write the page whole, or leave `path` as it was (`atomic.write_text`)."""
    return write_text(path, html)


def render_html(data: ReportData) -> str:
    return render_page(TEMPLATE, data, page_data(data))


def write_report(data: ReportData, path: Path) -> Path:
    return write_page(render_html(data), path)
