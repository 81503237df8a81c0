"""Two reviewers labelling the same items at the same time, over real HTTP, lose nothing (SQLite and
PostgreSQL)."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from livemed.records import Answer, AuditSample, Case, Grade, Label, Rubric
from livemed.review.app import make_app
from livemed.review.sample import draw_sample
from livemed.review.tokens import invite
from livemed.store import Store
from tests.review.conftest import JUDGE, csrf_of
from tests.review.serving import serving


def _label_all(base: str, token: str, items: list[str], verdict: str, start: threading.Barrier) -> list[int]:
    with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as client:
        csrf = csrf_of(client.get(f"/login?token={token}").text)
        start.wait()
        return [
            client.post(
                "/label",
                data={"csrf": csrf, "queue": "audit", "item_id": item, "verdict": verdict, "note": verdict},
                follow_redirects=False,
            ).status_code
            for item in items
        ]


def test_two_reviewers_at_once_lose_no_label(any_store: Store, demo_db: Path) -> None:
    demo = Store(demo_db)
    for kind in (Case, Rubric, Answer, Grade):
        any_store.put(demo.iter(kind))
    demo.close()
    sample = draw_sample(any_store, JUDGE, 30, seed=2, double_share=1.0)
    any_store.put([sample])
    items = [item.grade_id for item in sample.items]
    tokens = {"ada": invite(any_store, "ada"), "bo": invite(any_store, "bo")}
    codes: dict[str, list[int]] = {}
    start = threading.Barrier(2)
    with serving(make_app(any_store)) as base:
        threads = [
            threading.Thread(
                target=lambda n=name, v=verdict: codes.__setitem__(
                    n, _label_all(base, tokens[n], items, v, start)
                )
            )
            for name, verdict in (("ada", "met"), ("bo", "not met"))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert codes == {"ada": [303] * len(items), "bo": [303] * len(items)}
    labels = list(any_store.iter(Label))
    assert len(labels) == 2 * len(items) == 60
    for name, verdict in (("ada", "met"), ("bo", "not met")):
        mine = {label.item_id: label for label in labels if label.reviewer == name}
        assert set(mine) == set(items)
        assert {(label.verdict, label.note) for label in mine.values()} == {(verdict, verdict)}
    assert any_store.get(AuditSample, f"audit_sample:{JUDGE}") == sample  # the app wrote labels only
