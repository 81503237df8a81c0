"""Curation over the store: incremental, resumable, prefilter-aware, with a funnel per source."""

from __future__ import annotations

from livemed.curate.chain import curate_store, output_ids, pending_docs
from livemed.records import Case, Doc, Rejection, Score
from livemed.store import Store
from tests.curate.conftest import baseline_chain, report, thread


def _docs() -> list[Doc]:
    return [
        thread("a"),
        thread("b", answer=None),
        thread("c", source="other-forum"),
        report("r"),
        thread("skipped"),
    ]


def _prefilter(doc: Doc) -> Rejection:
    return Rejection(stage="prefilter", reason="too_short", record_kind="doc", record_id=doc.id)


async def test_curate_store_writes_outcomes_and_resumes(any_store: Store) -> None:
    sqlite_store = any_store  # SQLite, and PostgreSQL when configured
    docs = _docs()
    sqlite_store.put([*docs, _prefilter(docs[-1])])
    chain = baseline_chain()
    result, funnel = await curate_store(sqlite_store, chain)
    assert result.processed == 4
    assert result.written == {"case": 3, "rejection": 1}
    assert sqlite_store.get(Case, "case:forum:a") is not None
    rejection = sqlite_store.get(Rejection, "screener:forum:b")
    assert rejection is not None
    assert rejection.reason == "missing_advice"
    assert sqlite_store.get(Case, "case:forum:skipped") is None  # the prefilter rejected it
    forum = funnel.counts["forum"]
    assert (forum["screener"].taken, forum["screener"].passed) == (2, 1)
    assert forum["screener"].rejected == {"missing_advice": 1}
    assert (forum["controller"].taken, forum["controller"].passed) == (1, 1)
    assert funnel.counts["journal"]["controller"].passed == 1
    again, funnel_again = await curate_store(sqlite_store, chain)
    assert again.processed == 0
    assert not funnel_again.counts


async def test_limit_counts_only_new_documents(sqlite_store: Store) -> None:
    sqlite_store.put(_docs()[:4])
    first, _ = await curate_store(sqlite_store, baseline_chain(), limit=2)
    second, _ = await curate_store(sqlite_store, baseline_chain(), limit=2)
    assert (first.processed, second.processed) == (2, 2)
    assert list(pending_docs(sqlite_store)) == []


async def test_a_rejection_by_any_chain_stage_marks_the_document_done(sqlite_store: Store) -> None:
    doc = thread("z")
    later = Rejection(stage="controller", reason="ungrounded", record_kind="doc", record_id=doc.id)
    sqlite_store.put([doc, later])
    assert later.id in output_ids(doc)
    assert list(pending_docs(sqlite_store)) == []
    result, _ = await curate_store(sqlite_store, baseline_chain())
    assert result.processed == 0


async def test_run_stage_accepts_several_output_ids_per_item(sqlite_store: Store) -> None:
    from livemed.pipeline.runner import run_stage

    docs = [thread("x"), thread("y")]
    sqlite_store.put([Rejection(stage="validator", reason="r", record_kind="doc", record_id=docs[0].id)])
    seen: list[str] = []

    async def work(doc: Doc) -> list[Rejection]:
        seen.append(doc.id)
        return [Rejection(stage="screener", reason="r", record_kind="doc", record_id=doc.id)]

    result = await run_stage(
        sqlite_store, docs, work, output_id=output_ids, output_kinds=("case", "rejection")
    )
    assert seen == ["forum:y"]
    assert (result.seen, result.skipped, result.processed) == (2, 1, 1)


async def test_a_call_failure_is_retried_on_the_next_run_and_then_deleted(sqlite_store: Store) -> None:
    from livemed.models.fake import FakeModel
    from tests.curate.conftest import make_chain

    doc = thread("flaky")
    sqlite_store.put([doc])
    broken = make_chain(FakeModel("fake/broken", default="not json at all"))
    failed, _ = await curate_store(sqlite_store, broken)
    assert failed.rejected == {"screener_failed": 1}
    assert [d.id for d in pending_docs(sqlite_store)] == [doc.id]  # not done: retried next time
    retried, funnel = await curate_store(sqlite_store, baseline_chain())
    assert retried.processed == 1
    assert sqlite_store.get(Case, f"case:{doc.id}") is not None
    assert sqlite_store.get(Rejection, f"screener:{doc.id}") is None  # the stale failure is gone
    assert funnel.counts["forum"]["controller"].passed == 1
    assert list(pending_docs(sqlite_store)) == []


async def test_a_failed_evidence_search_is_retryable_not_unsupported(sqlite_store: Store) -> None:
    from livemed.evidence.europepmc import EuropePMCRetriever
    from livemed.sources.europepmc import Settings
    from tests.fakes.europepmc import FakeEuropePMC, europepmc_server

    doc = thread("offline")
    sqlite_store.put([doc])
    with europepmc_server(FakeEuropePMC(status=503)) as fake:
        fast = Settings(max_retries=1, backoff_base_s=0.01)
        chain = baseline_chain(retriever=EuropePMCRetriever(base_url=fake.base_url, settings=fast))
        result, _ = await curate_store(sqlite_store, chain)
    assert result.rejected == {"retrieval_failed": 1}
    rejection = sqlite_store.get(Rejection, f"validator:{doc.id}")
    assert rejection is not None
    assert "503" in rejection.detail
    assert [d.id for d in pending_docs(sqlite_store)] == [doc.id]


async def test_redo_recurates_documents_and_replaces_their_outcome(sqlite_store: Store) -> None:
    from livemed.config import Thresholds

    doc = thread("again")
    sqlite_store.put([doc])
    await curate_store(sqlite_store, baseline_chain())
    assert sqlite_store.get(Case, f"case:{doc.id}") is not None
    skipped, _ = await curate_store(sqlite_store, baseline_chain(thresholds=Thresholds(s_inf=1.0)))
    assert skipped.processed == 0  # without redo, a curated document is done
    redone, _ = await curate_store(sqlite_store, baseline_chain(thresholds=Thresholds(s_inf=1.0)), redo=True)
    assert redone.processed == 1
    assert sqlite_store.get(Case, f"case:{doc.id}") is None
    rejection = sqlite_store.get(Rejection, f"validator:{doc.id}")
    assert rejection is not None
    assert rejection.reason == "insufficient_narrative"


def _built_on(case_id: str) -> list[object]:
    """A rubric, an answer and what grading builds on the answer, for `case_id`."""
    from livemed.records import Answer, Criterion, ErrorLabel, Grade, GradeFailure, Rubric, Score

    criterion = Criterion(text="Advises rest", polarity="positive", axis="accuracy", weight=5)
    answer = Answer(case_id=case_id, model="fake/m", text="Rest.")
    on_answer = {"answer_id": answer.id, "case_id": case_id}
    return [
        Rubric(case_id=case_id, criteria=[criterion]),
        answer,
        Grade(**on_answer, criterion_id=criterion.id, judge="fake/j", met=True),
        GradeFailure(**on_answer, criterion_id="c2", judge="fake/j", reason="unparsable", raw="?"),
        Score(**on_answer, model="fake/m", judge="fake/j", score=1.0, coverage=1.0, harm=0.0),
        ErrorLabel(**on_answer, model="fake/m", classifier="h", method="heuristic", category="KGOC"),
    ]


async def test_redo_keeps_what_an_unchanged_case_has_and_drops_it_when_the_case_goes(
    sqlite_store: Store,
) -> None:
    from livemed.config import Thresholds

    docs = [thread("changes"), thread("stays")]
    sqlite_store.put(docs)
    await curate_store(sqlite_store, baseline_chain())
    changing, staying = (f"case:{d.id}" for d in docs)
    sqlite_store.put(_built_on(changing) + _built_on(staying))  # type: ignore[arg-type]
    before = sqlite_store.count()
    assert before["rubric"] == before["answer"] == before["score"] == 2

    await curate_store(sqlite_store, baseline_chain(), redo=True)  # same chain, same cases
    assert sqlite_store.count() == before

    strict = baseline_chain(thresholds=Thresholds(s_inf=1.0))
    await curate_store(sqlite_store, strict, redo=True, limit=1)  # documents go in id order: "changes" only
    after = sqlite_store.count()
    assert sqlite_store.get(Case, changing) is None  # rejected now
    for kind in ("rubric", "answer", "grade", "grade_failure", "score", "error_label"):
        assert after.get(kind) == 1, kind  # only the other case's records remain
    assert all(s.case_id == staying for s in sqlite_store.iter(Score))
