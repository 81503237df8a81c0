from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

from livemed.errors import SourceError
from livemed.prefilter import Prefilters
from livemed.prefilter.simple import LengthFilter
from livemed.records import Doc, Rejection
from livemed.sources.base import DocOrRejection
from livemed.sources.files import Files, Settings
from livemed.sources.run import harvest_source, harvest_sources, watermark
from livemed.store import Store
from tests.sources.helpers import day

CUTOFF = day("2025-01-01")


def write_threads(path: Path, dates: list[str]) -> None:
    rows = [{"id": f"t{i}", "date": d, "post": f"post number {i} " * 5} for i, d in enumerate(dates)]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")


async def test_watermark_advances_and_reharvest_adds_nothing(any_store: Store, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_threads(path, ["2024-12-01", "2025-02-01", "2025-03-01"])
    source = Files(Settings(path=path))
    chain = Prefilters([LengthFilter(10, 1000)])
    report = await harvest_source(any_store, source, chain, until=day("2025-12-31"), cutoff=CUTOFF)
    assert report.kept == 2
    assert report.since == CUTOFF
    assert any_store.ids("doc")
    assert sorted(any_store.ids("doc")) == ["files:t1", "files:t2"]
    assert watermark(any_store, "files") == day("2025-03-01")

    before = any_store.count()
    again = await harvest_source(any_store, source, chain, until=day("2025-12-31"), since=CUTOFF)
    assert again.kept == 0
    assert again.skipped == 2
    assert any_store.count() == before

    write_threads(path, ["2024-12-01", "2025-02-01", "2025-03-01", "2025-04-01"])
    third = await harvest_source(any_store, source, chain, until=day("2025-12-31"), cutoff=CUTOFF)
    assert third.since == day("2025-03-01")  # continued from the watermark
    assert third.kept == 1
    assert watermark(any_store, "files") == day("2025-04-01")


async def test_prefilter_rejections_are_stored_and_not_redone(sqlite_store: Store, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps({"id": "short", "date": "2025-02-01", "post": "hi"}) + "\n{broken\n", encoding="utf-8"
    )
    chain = Prefilters([LengthFilter(10, 1000)])
    report = await harvest_source(
        sqlite_store, Files(Settings(path=path)), chain, until=day("2025-12-31"), since=CUTOFF
    )
    assert report.rejected == {("prefilter", "too_short"): 1, ("harvest", "bad_json"): 1}
    stored = sqlite_store.get(Rejection, "prefilter:files:short")
    assert stored is not None
    assert stored.reason == "too_short"
    again = await harvest_source(
        sqlite_store, Files(Settings(path=path)), chain, until=day("2025-12-31"), since=CUTOFF
    )
    assert again.skipped == 2  # the short document, and the unreadable line logged the first time
    assert again.rejected == {}  # nothing counted twice in the rejection log
    assert report.counts()["files.rejected.prefilter.too_short"] == 1


class Flaky:
    name = "flaky"
    ordered = True

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        yield Doc(source="flaky", source_id="1", published=day("2025-02-01"), text="a document text")
        raise SourceError("flaky: GET /x still failing after 5 attempts (HTTP 503)")


async def test_failing_source_keeps_its_watermark_and_the_docs_it_gave(sqlite_store: Store) -> None:
    sqlite_store.state_set("watermark", "flaky", "2025-01-15T00:00:00+00:00")
    report = await harvest_source(
        sqlite_store, Flaky(), Prefilters([]), until=day("2025-12-31"), cutoff=CUTOFF
    )
    assert report.error is not None
    assert "HTTP 503" in report.error
    assert watermark(sqlite_store, "flaky") == day("2025-01-15")
    assert sqlite_store.has("doc", ["flaky:1"]) == {"flaky:1"}
    assert report.since == day("2025-01-15")


async def test_limited_run_of_an_unordered_source_keeps_the_watermark(
    sqlite_store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    write_threads(path, ["2025-03-01", "2025-02-01", "2025-04-01"])
    chain = Prefilters([LengthFilter(10, 1000)])
    report = await harvest_source(
        sqlite_store, Files(Settings(path=path)), chain, until=day("2025-12-31"), cutoff=CUTOFF, limit=1
    )
    assert report.kept == 1
    assert watermark(sqlite_store, "files") is None  # an unordered partial run could skip older documents


async def test_near_duplicates_of_stored_docs_are_rejected_across_runs(
    sqlite_store: Store, tmp_path: Path
) -> None:
    from livemed.prefilter.duplicates import DuplicateFilter

    text = "my knee has been swollen and painful for three weeks after a fall while running " * 3
    first = tmp_path / "a.jsonl"
    first.write_text(json.dumps({"id": "a", "date": "2025-02-01", "post": text}), encoding="utf-8")
    second = tmp_path / "b.jsonl"
    second.write_text(json.dumps({"id": "b", "date": "2025-02-02", "post": text + " help"}), encoding="utf-8")
    until = day("2025-12-31")
    await harvest_source(
        sqlite_store, Files(Settings(path=first)), Prefilters([DuplicateFilter()]), until=until, since=CUTOFF
    )
    fresh = Prefilters([DuplicateFilter()])  # a new process: the index comes from the store
    report = await harvest_source(
        sqlite_store, Files(Settings(path=second)), fresh, until=until, since=CUTOFF
    )
    assert report.rejected == {("prefilter", "duplicate_near"): 1}


async def test_limit_counts_only_new_documents_so_an_unordered_source_progresses(
    sqlite_store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    write_threads(path, ["2025-03-01", "2025-02-01", "2025-04-01", "2025-05-01", "2025-01-20"])
    chain = Prefilters([LengthFilter(10, 1000)])
    source = Files(Settings(path=path))
    kept = []
    for _ in range(3):
        report = await harvest_source(
            sqlite_store, source, chain, until=day("2025-12-31"), cutoff=CUTOFF, limit=2
        )
        kept.append(report.kept)
    assert kept == [2, 2, 1]  # each run takes up to 2 documents not stored yet
    assert len(list(sqlite_store.ids("doc"))) == 5
    assert watermark(sqlite_store, "files") == day("2025-05-01")  # the last run was not cut short


async def test_a_row_on_the_watermark_day_added_later_is_harvested_and_the_cutoff_stays_exclusive(
    sqlite_store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    rows = [("on-cutoff", "2025-01-01"), ("feb", "2025-02-01"), ("mar-noon", "2025-03-01T12:00:00Z")]

    def write(extra: list[tuple[str, str]]) -> None:
        lines = [{"id": i, "date": d, "post": f"post {i} " * 5} for i, d in rows + extra]
        path.write_text("\n".join(json.dumps(r) for r in lines), encoding="utf-8")

    write([])
    source, chain, until = Files(Settings(path=path)), Prefilters([]), day("2025-12-31")
    first = await harvest_source(sqlite_store, source, chain, until=until, cutoff=CUTOFF)
    assert sorted(sqlite_store.ids("doc")) == ["files:feb", "files:mar-noon"]  # not the cutoff day itself
    assert first.out_of_window == 1
    assert watermark(sqlite_store, "files") == day("2025-03-01T12:00:00")

    write(
        [("mar-midnight", "2025-03-01"), ("mar-morning", "2025-03-01T08:00:00Z"), ("feb-late", "2025-02-02")]
    )
    second = await harvest_source(sqlite_store, source, chain, until=until, cutoff=CUTOFF)
    assert second.since == day("2025-03-01")  # the start of the watermark's day
    assert second.kept == 2  # both rows of the watermark day added since; feb-late is before it
    assert second.skipped == 1  # mar-noon, already stored
    assert "files:mar-midnight" in sqlite_store.ids("doc")
    assert "files:mar-morning" in sqlite_store.ids("doc")
    assert watermark(sqlite_store, "files") == day("2025-03-01T12:00:00")


async def test_a_since_window_after_the_watermark_leaves_the_watermark_so_the_gap_is_harvested(
    sqlite_store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    source, chain, until = Files(Settings(path=path)), Prefilters([]), day("2025-12-31")
    write_threads(path, ["2025-02-01"])
    await harvest_source(sqlite_store, source, chain, until=until, cutoff=CUTOFF)
    assert watermark(sqlite_store, "files") == day("2025-02-01")

    write_threads(path, ["2025-02-01", "2025-03-01", "2025-06-01"])  # t1 falls in the gap, t2 after --since
    later = await harvest_source(sqlite_store, source, chain, until=until, since=day("2025-05-01"))
    assert later.kept == 1
    assert watermark(sqlite_store, "files") == day("2025-02-01")  # not moved past the unharvested March

    default = await harvest_source(sqlite_store, source, chain, until=until, cutoff=CUTOFF)
    assert default.since == day("2025-02-01")
    assert (default.kept, default.skipped) == (1, 2)  # March taken; February and June already stored
    assert sorted(sqlite_store.ids("doc")) == ["files:t0", "files:t1", "files:t2"]
    assert watermark(sqlite_store, "files") == day("2025-06-01")

    write_threads(path, ["2025-02-01", "2025-03-01", "2025-06-01", "2025-07-01"])
    overlapping = await harvest_source(sqlite_store, source, chain, until=until, since=day("2025-06-01"))
    assert overlapping.kept == 1
    assert watermark(sqlite_store, "files") == day("2025-07-01")  # began at the watermark: it moves


async def test_a_first_since_window_after_the_cutoff_sets_no_watermark(
    sqlite_store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    source, chain, until = Files(Settings(path=path)), Prefilters([]), day("2025-12-31")
    write_threads(path, ["2025-02-01", "2025-06-01"])
    first = await harvest_source(
        sqlite_store, source, chain, until=until, since=day("2025-05-01"), cutoff=CUTOFF
    )
    assert first.kept == 1
    assert watermark(sqlite_store, "files") is None  # February, between the cutoff and --since, is still owed
    default = await harvest_source(sqlite_store, source, chain, until=until, cutoff=CUTOFF)
    assert (default.kept, default.skipped) == (1, 1)
    assert watermark(sqlite_store, "files") == day("2025-06-01")


def test_harvest_sources_sums_the_reports_and_puts_their_counts_on_the_run(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """The harvest stage `livemed harvest` and `livemed update` share: each source in turn, its counts
    into the Run's as it ends, kept, rejected and unreadable records summed."""
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_threads(good, ["2025-02-01", "2025-03-01"])
    bad.write_text(
        json.dumps({"id": "short", "date": "2025-02-01", "post": "hi"}) + "\n{broken\n", encoding="utf-8"
    )
    sources = [Files(Settings(path=good)), Files(Settings(path=bad))]
    counts: dict[str, int] = {}
    told: list[int] = []
    result = harvest_sources(
        sqlite_store,
        sources,
        Prefilters([LengthFilter(10, 1000)]),
        until=day("2025-12-31"),
        since=CUTOFF,
        counts=counts,
        on_report=lambda report: told.append(report.kept),
    )
    assert [r.kept for r in result.reports] == told == [2, 0]
    assert (result.kept, result.rejected, result.unreadable, result.errors) == (2, 2, 1, [])
    assert counts["files.kept"] == 0  # both sources are named files: the last report's counts win
    assert counts["files.rejected.harvest.bad_json"] == 1
