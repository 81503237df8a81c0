"""The audit sample, queues, labels and reviewed rubric versions, on real stores (PostgreSQL in CI)."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from pathlib import Path

import pytest

from livemed.errors import UserError
from livemed.records import (
    Answer,
    AuditSample,
    Criterion,
    Doc,
    Grade,
    GradeFailure,
    Label,
    Rejection,
    RubricVersion,
)
from livemed.review import results as results_module
from livemed.review.labels import (
    audit_labels,
    edited,
    export_labels,
    import_labels,
    labels_of,
    put_label,
    undo_last,
)
from livemed.review.queues import get_item, pending, pending_ids, progress
from livemed.review.results import ReviewResults
from livemed.review.sample import allocate, draw_sample
from livemed.rubrics.versions import latest_versions
from livemed.score.corrected import scored_frame
from livemed.store import Store
from tests.builders import PUBLISHED, make_answer, make_case, make_rubric

JUDGE = "offline/lexical"
AXES = ("accuracy", "completeness", "safety")


def _criteria() -> list[Criterion]:
    return [
        Criterion(text=f"Mentions point {i} on {axis}", polarity="positive", axis=axis, weight=3)
        for i, axis in enumerate(AXES)
    ] + [Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-5)]


def _filled(store: Store, cases: int = 4, models: int = 2) -> None:
    """`cases` cases × `models` answers, every criterion graded (met on alternate items)."""
    flip = itertools.cycle([True, False, True])
    for c in range(cases):
        case = make_case(f"demo:{c}")
        rubric = make_rubric(case, _criteria())
        answers = [
            make_answer(case, f"Answer {m} <script>alert(1)</script>", f"fake/m{m}") for m in range(models)
        ]
        grades = [
            Grade(answer_id=a.id, case_id=case.id, criterion_id=k.id, judge=JUDGE, met=next(flip))
            for a in answers
            for k in rubric.criteria
        ]
        store.put([case, rubric, *answers, *grades])


def _sampled(store: Store) -> AuditSample:
    """`_filled`, with an audit sample of 6 drawn and stored."""
    _filled(store)
    sample = draw_sample(store, JUDGE, 6, seed=1)
    store.put([sample])
    return sample


def test_allocation_takes_everything_or_exactly_the_size_with_a_floor_per_cell() -> None:
    assert allocate({"a": 3, "b": 2}, 10) == {"a": 3, "b": 2}
    taken = allocate({"big": 1000, "small": 3, "mid": 97}, 40)
    assert sum(taken.values()) == 40
    assert taken["small"] == 3  # the floor (40 // 12 = 3) takes all of a tiny cell
    assert taken["big"] > taken["mid"] > taken["small"]
    with pytest.raises(UserError):
        allocate({"a": 3}, 0)


def test_sample_is_stratified_seeded_and_grows_as_a_superset(any_store: Store) -> None:
    _filled(any_store, cases=6)
    small = draw_sample(any_store, JUDGE, 12, seed=3)
    again = draw_sample(any_store, JUDGE, 12, seed=3)
    larger = draw_sample(any_store, JUDGE, 24, seed=3)
    assert [i.grade_id for i in small.items] == [i.grade_id for i in again.items]
    assert {i.grade_id for i in small.items} <= {i.grade_id for i in larger.items}
    assert sum(s.population for s in small.strata) == 6 * 2 * 4
    assert sum(s.drawn for s in small.strata) == len(small.items) == 12
    cells = {s.key for s in small.strata}
    assert {"safety:met", "safety:not met", "accuracy:met"} <= cells
    for stratum in small.strata:
        assert stratum.inclusion == stratum.drawn / stratum.population
    with pytest.raises(UserError, match="no verdicts of grader"):
        draw_sample(any_store, "other/judge", 5)


def test_audit_queue_is_blind_and_double_items_wait_for_two_reviewers(any_store: Store) -> None:
    _filled(any_store)
    sample = draw_sample(any_store, JUDGE, 10, seed=1, double_share=0.5)
    any_store.put([sample])
    doubles = {i.grade_id for i in sample.items if i.double}
    assert doubles
    assert len(doubles) < len(sample.items)
    first = pending(any_store, "ana", "audit", limit=100)
    assert {i.item_id for i in first} == {i.grade_id for i in sample.items}
    item = first[0]
    assert item.answer is not None
    assert "<script>" in item.answer
    assert item.criterion is not None
    assert "verdict" not in item.detail
    assert "met" not in item.detail
    for one in first:
        put_label(any_store, "ana", "audit", one.item_id, "met")
    assert pending(any_store, "ana", "audit") == []
    second = {i.item_id for i in pending(any_store, "ben", "audit", limit=100)}
    assert second == doubles  # a single-review item is done after one label
    assert progress(any_store, "ana")["audit"] == (len(sample.items), len(sample.items))


def test_labels_replace_per_reviewer_and_never_collide_between_reviewers(any_store: Store) -> None:
    _filled(any_store)
    sample = draw_sample(any_store, JUDGE, 8, seed=2, double_share=1.0)
    any_store.put([sample])
    item = sample.items[0].grade_id
    put_label(any_store, "ana", "audit", item, "met")
    put_label(any_store, "ana", "audit", item, "not met", "on reflection")
    put_label(any_store, "ben", "audit", item, "unsure")
    mine = [label for label in labels_of(any_store) if label.item_id == item]
    assert sorted((label.reviewer, label.verdict) for label in mine) == [
        ("ana", "not met"),
        ("ben", "unsure"),
    ]
    assert [label.verdict for label in audit_labels(any_store, JUDGE)] == ["not met"]  # unsure is no verdict
    with pytest.raises(UserError, match="not a verdict of the audit queue"):
        put_label(any_store, "ana", "audit", item, "approve")
    with pytest.raises(UserError, match="not in the audit sample"):
        put_label(any_store, "ana", "audit", "grade:nope", "met")


def test_two_reviewers_labelling_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        _filled(store, cases=4)
        sample = draw_sample(store, JUDGE, 20, seed=5, double_share=1.0)
        store.put([sample])
    errors: list[BaseException] = []

    def label_all(reviewer: str) -> None:
        try:
            with Store(path, lock_timeout=30) as own:
                for item in sample.items:
                    put_label(own, reviewer, "audit", item.grade_id, "met")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=label_all, args=(name,)) for name in ("ana", "ben")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store(path) as store:
        assert len(labels_of(store)) == 2 * len(sample.items)


def test_criterion_edit_strike_and_undo_make_versions_and_keep_the_writer_rubric(any_store: Store) -> None:
    _filled(any_store, cases=1)
    items = pending(any_store, "ana", "criteria", limit=10)
    assert len(items) == 4
    assert items[0].advice
    assert "Avoid ibuprofen" in items[0].advice
    case_id = items[0].item_id.partition("#")[0]
    first, second = items[0], items[1]
    assert first.criterion is not None
    put_label(
        any_store, "ana", "criteria", first.item_id, "edit", edit=edited(first.criterion, "Names point 0")
    )
    put_label(any_store, "ben", "criteria", second.item_id, "strike")
    version = latest_versions(any_store, [case_id])[case_id]
    assert version.version == 2
    texts = [c.text for c in version.criteria]
    assert "Names point 0" in texts
    assert second.criterion is not None
    assert second.criterion.text not in texts
    assert len(pending(any_store, "carl", "criteria", limit=10)) == 2  # acted-on criteria leave the queue
    undone = undo_last(any_store, "ben")
    assert undone is not None
    assert undone.verdict == "strike"
    restored = latest_versions(any_store, [case_id])[case_id]
    assert restored.version == 3
    assert second.criterion.text in [c.text for c in restored.criteria]
    assert "Names point 0" in [c.text for c in restored.criteria]  # ana's edit stays
    assert len(list(any_store.iter(RubricVersion))) == 3
    writer = any_store.get(type(make_rubric(make_case())), f"rubric:{case_id}")
    assert writer is not None
    assert [c.text for c in writer.criteria] == [c.text for c in _criteria()]


def test_a_rubric_keeps_a_positive_criterion(sqlite_store: Store) -> None:
    case = make_case()
    only = Criterion(text="Says to rest", polarity="positive", axis="accuracy", weight=2)
    harm = Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-5)
    sqlite_store.put([case, make_rubric(case, [only, harm])])
    with pytest.raises(UserError, match="at least one positive criterion"):
        put_label(sqlite_store, "ana", "criteria", f"{case.id}#{only.id}", "strike")
    assert labels_of(sqlite_store) == []  # a refused change leaves no label


def test_failures_and_cases_queues(sqlite_store: Store) -> None:
    case = make_case()
    rubric = make_rubric(case, _criteria())
    answer: Answer = make_answer(case)
    failure = GradeFailure(
        answer_id=answer.id,
        case_id=case.id,
        criterion_id=rubric.criteria[0].id,
        judge=JUDGE,
        reason="ambiguous",
        raw="maybe?",
    )
    called = GradeFailure(
        answer_id=answer.id,
        case_id=case.id,
        criterion_id=rubric.criteria[1].id,
        judge=JUDGE,
        reason="call_failed",
    )
    doc = Doc(source="demo", source_id="9", published=PUBLISHED, text="The answer is <b>colchicine</b>.")
    leak = Rejection(stage="controller", reason="answer_leak", record_kind="doc", record_id=doc.id)
    other = Rejection(stage="prefilter", reason="too_short", record_kind="doc", record_id=doc.id)
    sqlite_store.put([case, rubric, answer, failure, called, doc, leak, other])
    failures = pending(sqlite_store, "ana", "failures")
    assert [i.item_id for i in failures] == [failure.id]  # a failed call is not a verdict to settle
    assert failures[0].detail["raw"] == "maybe?"
    cases = pending(sqlite_store, "ana", "cases")
    assert [i.item_id for i in cases] == [leak.id]
    assert "<b>colchicine</b>" in cases[0].prompt
    assert cases[0].detail["reason"] == "answer_leak"
    put_label(sqlite_store, "ana", "cases", leak.id, "overturn", "no leak: the post asks")
    assert get_item(sqlite_store, "ana", "cases", leak.id).mine is not None


def test_export_and_import_round_trip_and_report_bad_lines(sqlite_store: Store, tmp_path: Path) -> None:
    _filled(sqlite_store)
    sample = draw_sample(sqlite_store, JUDGE, 4, seed=1)
    sqlite_store.put([sample])
    for item in sample.items:
        put_label(sqlite_store, "ana", "audit", item.grade_id, "not met", "checked")
    out = tmp_path / "labels.jsonl"
    assert export_labels(sqlite_store, out) == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sqlite_store.delete(Label.kind, [f"label:audit:{r['item_id']}:ana" for r in rows])
    bad = {"reviewer": "zoe", "queue": "audit", "item_id": "grade:x", "verdict": "approve"}
    out.write_text("\n".join([*(json.dumps(r) for r in rows), "{not json", json.dumps(bad)]) + "\n")
    count, errors = import_labels(sqlite_store, out)
    assert count == 4
    assert [e.line for e in errors] == [5, 6]
    assert "not a verdict of the audit queue" in str(errors[1])
    assert {label.source for label in labels_of(sqlite_store)} == {"labels.jsonl"}


def test_the_app_recounts_queue_sizes_after_its_ttl(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.review import app as app_module

    _filled(sqlite_store)
    review = app_module.ReviewApp(sqlite_store, JUDGE, ReviewResults())
    assert review.progress("ana")["audit"] == (0, 0)  # no sample yet
    sqlite_store.put([draw_sample(sqlite_store, JUDGE, 6, seed=1)])
    assert review.progress("ana")["audit"] == (0, 0)  # within the TTL: the sizes counted before
    clock = time.monotonic() + app_module.SIZES_TTL_S + 1
    monkeypatch.setattr(time, "monotonic", lambda: clock)
    assert review.progress("ana")["audit"] == (0, 6)


async def test_results_are_computed_again_after_a_label_and_else_after_the_ttl(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.review import app as app_module

    sample = _sampled(sqlite_store)
    review = app_module.ReviewApp(sqlite_store, JUDGE, ReviewResults())

    async def labels_row() -> list[list[str]]:
        return list((await review.current_results())["sections"][0]["rows"])

    assert await labels_row() == []
    put_label(sqlite_store, "ana", "audit", sample.items[0].grade_id, "met")  # as another process would
    assert await labels_row() == []  # within the TTL
    review._put("ana", "audit", sample.items[1].grade_id, "met", "", "")  # the app's own label
    assert await labels_row() == [["audit", "ana", "2"]]
    put_label(sqlite_store, "ana", "audit", sample.items[2].grade_id, "met")
    clock = time.monotonic() + app_module.SIZES_TTL_S + 1
    monkeypatch.setattr(time, "monotonic", lambda: clock)
    assert await labels_row() == [["audit", "ana", "3"]]


def test_results_keep_the_verdicts_frame_until_a_grade_is_written(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = _sampled(sqlite_store)
    made = []
    real = scored_frame

    def counted(store: Store, judge: str) -> object:
        made.append(judge)
        return real(store, judge)

    monkeypatch.setattr(results_module, "scored_frame", counted)
    results = ReviewResults()

    def corrected() -> dict[str, object]:
        return dict(results(sqlite_store, JUDGE)["sections"][-1])

    assert "0 of 6 sampled verdicts labelled" in str(corrected()["note"])
    for item in sample.items[:4]:
        put_label(sqlite_store, "ana", "audit", item.grade_id, "not met")
    kept = corrected()
    assert "4 of 6 sampled verdicts labelled" in str(kept["note"])
    assert kept == dict(ReviewResults()(sqlite_store, JUDGE)["sections"][-1])  # as computed afresh
    assert made == [JUDGE, JUDGE]  # the labels alone did not read the verdicts again (the last: afresh)
    grade = sqlite_store.get(Grade, sample.items[0].grade_id)
    assert grade is not None
    sqlite_store.put([grade])  # graded again after the draw
    assert "written after its audit sample was drawn" in str(corrected()["note"])
    assert len(made) == 3


def test_the_verdicts_are_checked_again_only_after_the_recheck_time(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = _sampled(sqlite_store)
    results = ReviewResults(recheck_s=60.0)
    note = results(sqlite_store, JUDGE)["sections"][-1]["note"]
    grade = sqlite_store.get(Grade, sample.items[0].grade_id)
    assert grade is not None
    sqlite_store.put([grade])
    assert results(sqlite_store, JUDGE)["sections"][-1]["note"] == note  # within the recheck time
    clock = time.monotonic() + 61
    monkeypatch.setattr(time, "monotonic", lambda: clock)
    assert "written after its audit sample" in results(sqlite_store, JUDGE)["sections"][-1]["note"]


async def test_a_request_that_comes_while_results_are_computed_awaits_them_and_takes_their_values(
    sqlite_store: Store,
) -> None:
    from livemed.review import app as app_module

    sample = _sampled(sqlite_store)
    started, go, calls = threading.Event(), threading.Event(), []

    def slow(store: Store, judge: str | None) -> object:
        calls.append(judge)
        started.set()
        go.wait(10)
        return ReviewResults()(store, judge)

    review = app_module.ReviewApp(sqlite_store, JUDGE, slow)  # type: ignore[arg-type]
    first = asyncio.ensure_future(review.current_results())
    assert await asyncio.to_thread(started.wait, 10)  # the first computation is under way
    review._put("ana", "audit", sample.items[0].grade_id, "met", "", "")  # while it is computed
    second = asyncio.ensure_future(review.current_results())
    await asyncio.sleep(0)  # the second request is now awaiting the first computation
    go.set()
    got = await asyncio.gather(first, second)
    assert len(calls) == 1  # one computation, for both requests
    assert got[0] is got[1]
    labels = (await review.current_results())["sections"][0]["rows"]  # the label written meanwhile
    assert labels == [["audit", "ana", "1"]]
    assert len(calls) == 2


def test_a_sample_drawn_again_is_what_the_audit_queue_offers_next(sqlite_store: Store) -> None:
    first = _sampled(sqlite_store)
    offered = pending_ids(sqlite_store, "ana", "audit", judge=JUDGE, limit=50)
    assert sorted(offered) == sorted(item.grade_id for item in first.items)
    again = draw_sample(sqlite_store, JUDGE, 3, seed=2)
    sqlite_store.put([again])
    offered = pending_ids(sqlite_store, "ana", "audit", judge=JUDGE, limit=50)
    assert sorted(offered) == sorted(item.grade_id for item in again.items)
    gone = next(i.grade_id for i in first.items if i.grade_id not in offered)
    with pytest.raises(UserError, match="is not in the audit sample"):
        get_item(sqlite_store, "ana", "audit", gone, judge=JUDGE)


def test_results_computed_in_the_worker_process_are_those_computed_here(sqlite_store: Store) -> None:
    sample = _sampled(sqlite_store)
    worker = results_module.WorkerResults(sqlite_store.url)
    try:
        assert worker(sqlite_store, JUDGE) == ReviewResults()(sqlite_store, JUDGE)
        for item in sample.items[:3]:
            put_label(sqlite_store, "ana", "audit", item.grade_id, "not met")
        labelled = worker(sqlite_store, JUDGE)  # the worker's kept frame, the labels read again
        assert labelled == ReviewResults()(sqlite_store, JUDGE)
        assert labelled["sections"][0]["rows"] == [["audit", "ana", "3"]]
    finally:
        worker.close()
    assert worker.pool is None
