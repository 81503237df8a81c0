"""`rubrics.stage.write_rubrics`, the rubric stage `livemed rubrics` and `livemed update` share: a list
or a Feed of cases, cases with a rubric skipped, each written batch told, stale rejections dropped."""

from __future__ import annotations

import asyncio

from livemed.domains import load_pack
from livemed.pipeline.runner import Feed
from livemed.records import Case, Rejection, Rubric
from livemed.rubrics.rules import RuleWriter
from livemed.rubrics.stage import rubric_verdicts, without_verdicts, write_rubrics
from livemed.rubrics.write import rejection_id
from livemed.store import Store
from tests.domains.helpers import legal_case


def _rejection(case: Case, *, call_failed: bool) -> Rejection:
    reason = "themes_failed" if call_failed else "sign_mismatch"  # a failed call, or a lint verdict
    return Rejection(stage="rubrics", reason=reason, record_kind="rubric", record_id=f"rubric:{case.id}")


def test_a_list_and_a_feed_write_the_same_rubrics_and_drop_stale_rejections(sqlite_store: Store) -> None:
    cases = [legal_case(i) for i in range(3)]
    legal = load_pack("legal")
    failed = _rejection(cases[0], call_failed=True)
    assert failed.id == rejection_id(cases[0].id)
    sqlite_store.put([*cases, failed])
    assert rubric_verdicts(sqlite_store, cases) == set()  # a failed call is tried again
    result = asyncio.run(write_rubrics(sqlite_store, cases, RuleWriter(legal), pack=legal))
    assert result.written["rubric"] == 3
    assert sqlite_store.has("rejection", [failed.id]) == set()  # the case has its rubric now
    listed = {r.case_id: r.criteria for r in sqlite_store.iter(Rubric)}

    sqlite_store.delete("rubric", [f"rubric:{c.id}" for c in cases[1:]])
    told: list[list[str]] = []

    async def fed() -> None:
        feed: Feed[Case] = Feed()
        feed.put(cases)
        feed.close()
        again = await write_rubrics(
            sqlite_store,
            feed,
            RuleWriter(legal),
            pack=legal,
            on_rubrics=lambda b: told.append([c.id for c in b]),
        )
        assert (again.seen, again.skipped, again.written["rubric"]) == (3, 1, 2)

    asyncio.run(fed())
    assert sorted(i for batch in told for i in batch) == sorted(c.id for c in cases[1:])
    assert {r.case_id: r.criteria for r in sqlite_store.iter(Rubric)} == listed


def test_a_verdict_is_not_tried_again(sqlite_store: Store) -> None:
    cases = [legal_case(i) for i in range(2)]
    verdict = _rejection(cases[1], call_failed=False)
    sqlite_store.put([*cases, verdict])
    todo, verdicts = without_verdicts(sqlite_store, cases)
    assert ([c.id for c in todo], verdicts) == ([cases[0].id], {verdict.id})
