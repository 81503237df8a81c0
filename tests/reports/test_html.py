"""The HTML report without a browser: self-contained, escaped, and its numbers are the analysis numbers."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from livemed.records import Score
from livemed.reports.build import ReportData, build_report
from livemed.reports.html import page_script, render_html, write_report
from livemed.store import Store
from tests.analysis.builders import SCRIPT, study
from tests.reports.conftest import FAST, registry


def _embedded_json(html: str) -> dict:  # type: ignore[type-arg]
    match = re.search(r'<script type="application/json" id="livemed-data">(.*?)</script>', html, re.S)
    assert match is not None
    return json.loads(match.group(1))  # type: ignore[no-any-return]


def test_only_the_pages_own_script_may_run(report_data: ReportData) -> None:
    html = render_html(report_data)
    (csp,) = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    policy = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert "unsafe-inline" not in policy["script-src"]
    assert "unsafe-eval" not in policy["script-src"]
    (script,) = re.findall(r"<script>(.*?)</script>", html, re.S)  # the one executable script
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    assert policy["script-src"] == f"'sha256-{digest}'"
    assert script == page_script()
    assert "livemed-data" in script


def test_harvested_script_is_escaped_everywhere(report_data: ReportData) -> None:
    html = render_html(report_data)
    assert SCRIPT not in html
    assert "&lt;script&gt;window.__pwned = 1; document.title = &#39;pwned&#39;&lt;/script&gt;" in html
    assert html.count("<script") == 2  # the JSON block and the page's own script
    assert "Study &lt;b&gt;42&lt;/b&gt;" in html  # even the title is data


def test_report_is_self_contained(report_data: ReportData) -> None:
    html = render_html(report_data)
    assert not re.search(r"<(link|img|iframe)\b", html)
    assert not re.search(r"""\s(src|href)=["']?(https?:)?//""", html)
    assert "default-src 'none'" in html  # and the page forbids loading anything anyway


def test_every_section_is_there_with_the_analysis_numbers(report_data: ReportData) -> None:
    html = render_html(report_data)
    for anchor in (
        "leaderboard",
        "axes",
        "contamination",
        "trends",
        "taxonomy",
        "funnel",
        "cases",
        "provenance",
    ):
        assert f'id="{anchor}"' in html
    for row in report_data.leaderboard:
        assert f'<td class="n strong">{row.mean:.3f}</td>' in html
    assert html.count("<svg") == 6
    strong = next(r for r in report_data.contamination.rows if r.model == "fake/strong")
    assert strong.status == "tested"
    assert f"{strong.pre_minus_post:.3f}" in html
    assert "fake/weak (heuristic)" in html  # the taxonomy chart labels the baseline
    assert ">rubricprompt01<" in html  # prompt hashes in the provenance section
    data = _embedded_json(html)
    assert [r["model"] for r in data["leaderboard"]] == [r.model for r in report_data.leaderboard]


def test_funnel_counts_documents_rejections_and_cases(report_data: ReportData) -> None:
    forum = next(f for f in report_data.funnel if f.source == "forum")
    # 100 cases: every 4th is from pubmed -> 75 forum cases, plus 6 rejected forum docs (3 by the
    # pre-filter, never stored; 3 by the screener)
    assert (forum.harvested, forum.documents, forum.uncurated) == (81, 78, 0)
    assert (forum.cases, forum.rubrics, forum.scored) == (75, 75, 75)
    assert forum.rejected == {"prefilter": 3, "screener": 3}
    assert forum.harvested - sum(forum.rejected_before().values()) == forum.documents
    assert forum.documents - sum(forum.rejected_in_curation().values()) - forum.uncurated == forum.cases


def test_json_in_the_page_cannot_close_its_script(report_store: Store, tmp_path: Path) -> None:
    evil = "fake/</script><script>alert(1)</script>"
    score = next(iter(report_store.iter(Score)))
    report_store.put([score.model_copy(update={"model": evil, "answer_id": score.answer_id + "x"})])
    data = build_report(report_store, registry(), settings=FAST, max_cases=3)
    path = write_report(data, tmp_path / "out" / "report.html")
    html = path.read_text(encoding="utf-8")
    assert html.count("<script") == 2
    assert evil in [r["model"] for r in _embedded_json(html)["leaderboard"]]


def test_report_builds_on_every_store_backend(any_store: Store) -> None:
    any_store.put(study(n_cases=12))
    data = build_report(any_store, registry(), settings=FAST, max_cases=4)
    assert [row.n_cases for row in data.leaderboard] == [12, 12, 12]
    assert len(data.cases) == 4
    assert data.cases[0].case.published > data.cases[-1].case.published  # most recent first
    assert all(len(view.answers) == 3 and len(view.answers[0].results) == 4 for view in data.cases)
    assert sum(row.harvested for row in data.funnel) == 18
    assert sum(row.documents for row in data.funnel) == 15  # the 3 the pre-filter rejected are not stored


def test_a_cases_rubric_says_its_fact_coverage(report_store: Store) -> None:
    from livemed.records import FactCoverage, Rubric

    rubrics = list(report_store.iter(Rubric))
    report_store.put(
        [rubrics[0].model_copy(update={"fact_coverage": FactCoverage(criteria=3, with_context=1, dropped=2)})]
    )
    html = render_html(build_report(report_store, registry(), settings=FAST, max_cases=100))
    line = "Fact coverage: 1 of 3 criteria rest on patient facts, each in what the candidate read; 2 dropped"
    assert html.count(line) == 1  # that rubric's; the study's others were written without the audit
    assert html.count("Fact coverage:") == 1
