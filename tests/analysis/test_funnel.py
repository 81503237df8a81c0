"""The curation funnel starts from what was harvested, and its counts add up."""

from __future__ import annotations

from livemed.analysis.funnel import funnel
from livemed.records import Rejection


def _rejection(stage: str, record_id: str, source: str | None = None) -> Rejection:
    return Rejection(stage=stage, reason="r", record_kind="doc", record_id=record_id, source=source)


def test_funnel_starts_from_harvested_documents_and_adds_up() -> None:
    stored = [f"forum:{i}" for i in range(10)]  # passed the pre-filter
    rejections = [
        _rejection("prefilter", "forum:p1", "forum"),  # never stored as documents
        _rejection("prefilter", "forum:p2", "forum"),
        _rejection("harvest", "forum:h1", "forum"),
        _rejection("validator", "forum:8", "forum"),
        _rejection("screener", "forum:9", "forum"),
        _rejection("controller", "forum:7", "forum"),
        _rejection("rubrics", "rubric:case:forum:0"),  # after curation; source read from the id
    ]
    cases = {f"case:forum:{i}": "forum" for i in range(6)}  # forum:6 is not curated yet
    [row], reasons = funnel(stored, rejections, cases, ["case:forum:1"], ["case:forum:1", "case:forum:2"])
    assert (row.source, row.harvested, row.documents, row.uncurated) == ("forum", 13, 10, 1)
    assert (row.cases, row.rubrics, row.scored) == (6, 1, 2)
    assert list(row.rejected) == ["harvest", "prefilter", "screener", "validator", "controller", "rubrics"]
    assert row.rejected_before() == {"harvest": 1, "prefilter": 2}
    assert row.rejected_in_curation() == {"screener": 1, "validator": 1, "controller": 1}
    assert row.rejected_later() == {"rubrics": 1}
    assert row.harvested - sum(row.rejected_before().values()) == row.documents
    assert row.documents - sum(row.rejected_in_curation().values()) - row.uncurated == row.cases
    assert sum(r.count for r in reasons) == len(rejections)


def test_imported_cases_have_no_harvested_documents() -> None:
    [row], _ = funnel([], [], {"case:k-qa:1": "k-qa", "case:k-qa:2": "k-qa"}, [], [])
    assert (row.source, row.harvested, row.documents, row.uncurated, row.cases) == ("k-qa", 0, 0, 0, 2)


def test_a_call_failure_is_not_a_verdict_and_is_not_counted_twice() -> None:
    failed = Rejection(stage="screener", reason="screener_failed", record_kind="doc", record_id="forum:1")
    again = Rejection(stage="validator", reason="retrieval_failed", record_kind="doc", record_id="forum:0")
    # forum:0 kept its earlier case while the retry of a --redo failed; forum:1 waits for its retry
    [row], reasons = funnel(["forum:0", "forum:1"], [failed, again], {"case:forum:0": "forum"}, [], [])
    assert row.rejected == {}
    assert (row.documents, row.uncurated, row.failed, row.cases) == (2, 1, 2, 1)
    assert row.documents - sum(row.rejected_in_curation().values()) - row.uncurated == row.cases
    assert {(r.stage, r.reason) for r in reasons} == {
        ("screener", "screener_failed"),
        ("validator", "retrieval_failed"),
    }
