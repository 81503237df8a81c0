"""Harvest sources into the store: the date window, pre-filters, rejections and the watermark.

`harvest_sources` is the harvest stage `livemed harvest` and `livemed update` run: each source in
turn (`harvest_source`), a failing one reported while the others go on.

The window starts at `--since` when given, else at the later of the cutoff and the start of the day
of the source's watermark (its newest publication date harvested so far), and ends at `until`. Only
documents published after the cutoff (or `--since`) and not after `until` are kept. Documents already
stored (as a Doc or as a pre-filter Rejection) are skipped, so re-harvesting a window adds nothing.
The watermark moves only when the source finished without error (and, for a `--limit` run, only for
sources that deliver in date order), and never for a `--since` window that began after the watermark
(a later default run would skip the days between them); a failing source (a SourceError, or any
unexpected error while it delivers) keeps its old watermark and the caller's other sources go on.
`--limit` counts new documents only (kept or rejected by a pre-filter, not already stored), so
repeated limited runs of an unordered source (pubmed, files) make progress.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from livemed.errors import ConfigError, SourceError
from livemed.prefilter import STAGE as PREFILTER_STAGE
from livemed.prefilter import Prefilters
from livemed.records import Doc, Record, Rejection
from livemed.sources.base import Source, day_start, parse_date
from livemed.store import Store

WATERMARKS = "watermark"
logger = logging.getLogger(__name__)


@dataclass
class SourceReport:
    """What one harvest of one source did."""

    source: str
    since: datetime | None = None
    until: datetime | None = None
    fetched: int = 0
    kept: int = 0
    skipped: int = 0
    out_of_window: int = 0
    rejected: Counter[tuple[str, str]] = field(default_factory=Counter)
    watermark_before: str | None = None
    watermark_after: str | None = None
    error: str | None = None

    def counts(self) -> dict[str, int]:
        """Flat counts for the Run record."""
        flat = {
            f"{self.source}.fetched": self.fetched,
            f"{self.source}.kept": self.kept,
            f"{self.source}.skipped": self.skipped,
            f"{self.source}.out_of_window": self.out_of_window,
            f"{self.source}.failed": int(self.error is not None),
        }
        for (stage, reason), n in self.rejected.items():
            flat[f"{self.source}.rejected.{stage}.{reason}"] = n
        return flat


def watermark(store: Store, source: str) -> datetime | None:
    return parse_date(store.state_get(WATERMARKS, source))


def window_start(
    store: Store, source: str, since: datetime | None, cutoff: datetime | None
) -> tuple[datetime, datetime]:
    """(query start, keep-after floor) for a harvest of `source`.

    Sources return what was published from the query start on (inclusive); `_Harvest` keeps only what
    was published after the floor (exclusive: `--since` or the cutoff).
    """
    if since is not None:
        return since, since
    if cutoff is None:
        raise ConfigError("no start date: pass --since or set `cutoff` in livemed.toml")
    mark = watermark(store, source)
    # From the start of the watermark's day: a document of that day added after the last harvest is
    # still taken (the stored ones are skipped by id); the cutoff stays exclusive through the floor.
    return (max(cutoff, day_start(mark.date())) if mark else cutoff), cutoff


class _Harvest:
    def __init__(
        self, store: Store, prefilters: Prefilters, report: SourceReport, batch_size: int, limit: int | None
    ) -> None:
        self.store, self.prefilters, self.report = store, prefilters, report
        self.batch_size, self.limit = batch_size, limit
        self.new = 0
        self.pending: list[Doc] = []
        self.records: list[Record] = []
        self.newest: datetime | None = None

    def add(self, item: Doc | Rejection, floor: datetime, until: datetime) -> None:
        if isinstance(item, Rejection):  # a record the source could not read: counted once, when new
            self.records.append(item)
        elif not floor < item.published <= until:
            self.report.out_of_window += 1
        else:
            self.report.fetched += 1
            self.newest = max(self.newest or item.published, item.published)
            self.pending.append(item)
        full = self.limit is not None and self.new + len(self.pending) >= self.limit
        if full or len(self.pending) + len(self.records) >= self.batch_size:
            self.flush()

    @property
    def full(self) -> bool:
        """True once `limit` new documents were taken in."""
        return self.limit is not None and self.new >= self.limit

    def flush(self) -> None:
        unreadable = [r for r in self.records if isinstance(r, Rejection)]
        logged = self.store.has("rejection", [r.id for r in unreadable])
        for rejection in unreadable:
            if rejection.id in logged:
                self.report.skipped += 1  # logged by an earlier harvest of this window
            else:
                self.report.rejected[(rejection.stage, rejection.reason)] += 1
        docs, self.pending = self.pending, []
        ids = [doc.id for doc in docs]
        done = self.store.has("doc", ids)
        done |= {
            i.split(":", 1)[1] for i in self.store.has("rejection", [f"{PREFILTER_STAGE}:{d}" for d in ids])
        }
        for doc in docs:
            if doc.id in done:
                self.report.skipped += 1
                continue
            done.add(doc.id)
            self.new += 1
            result = self.prefilters(doc)
            self.records.append(result)
            if isinstance(result, Rejection):
                self.report.rejected[(result.stage, result.reason)] += 1
            else:
                self.report.kept += 1
        self.store.put(self.records)
        self.prefilters.flush(self.store)
        self.records = []


async def _next(items: AsyncIterator[Doc | Rejection], report: SourceReport) -> Doc | Rejection | None:
    """The source's next item; None at its end or when it failed (the failure goes into `report`).

    Only the source's own failures are caught here, so one source failing, even with an unexpected
    error, leaves the other sources of the command to go on; store errors still end the run.
    """
    try:
        return await anext(items)
    except StopAsyncIteration:
        return None
    except SourceError as exc:
        report.error = str(exc)
    except Exception as exc:  # a bug or an unforeseen reply in one source must not end the others
        detail = " ".join(str(exc).split())[:300]
        report.error = f"{report.source}: unexpected {type(exc).__name__}: {detail}"
        logger.debug("source %s failed", report.source, exc_info=True)
    return None


def _advance(
    store: Store, source: str, newest: datetime, since: datetime | None, cutoff: datetime | None
) -> None:
    """Move the watermark to `newest`, unless a `--since` window began after it (or, with no watermark
    yet, after the cutoff): that would skip the gap."""
    before = watermark(store, source)
    start = before or cutoff
    if start is not None and since is not None and since > start:
        return  # a later default run must still harvest from the old watermark (or cutoff) to `since`
    if before is None or newest > before:
        store.state_set(WATERMARKS, source, newest.isoformat())


async def harvest_source(
    store: Store,
    source: Source,
    prefilters: Prefilters,
    *,
    until: datetime,
    since: datetime | None = None,
    cutoff: datetime | None = None,
    limit: int | None = None,
    batch_size: int = 200,
) -> SourceReport:
    """Harvest `source` into `store`; the source's failure is caught into the report (others go on)."""
    start, floor = window_start(store, source.name, since, cutoff)
    report = SourceReport(source.name, since=start, until=until)
    report.watermark_before = store.state_get(WATERMARKS, source.name)
    prefilters.load(store)  # duplicates are judged against everything already stored
    run = _Harvest(store, prefilters, report, batch_size, limit)
    items = source.harvest(start, until, limit=None)  # the limit counts new documents, see _Harvest
    try:
        while not run.full and (item := await _next(items, report)) is not None:
            run.add(item, floor, until)
    finally:
        run.flush()
        if (close := getattr(items, "aclose", None)) is not None:
            await close()
    if report.error is None and run.newest is not None and (source.ordered or not run.full):
        _advance(store, source.name, run.newest, since, cutoff)
    report.watermark_after = store.state_get(WATERMARKS, source.name)
    return report


@dataclass
class HarvestResult:
    """What one harvest of several sources did: a report per source, in order."""

    reports: list[SourceReport] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return sum(report.kept for report in self.reports)

    @property
    def rejected(self) -> int:
        return sum(sum(report.rejected.values()) for report in self.reports)

    @property
    def errors(self) -> list[str]:
        """The failing sources' errors."""
        return [report.error for report in self.reports if report.error]

    @property
    def unreadable(self) -> int:
        """Records the sources delivered that could not be read (rejections of stage harvest)."""
        return sum(
            n for report in self.reports for (stage, _), n in report.rejected.items() if stage == "harvest"
        )


def harvest_sources(
    store: Store,
    sources: Sequence[Source],
    prefilters: Prefilters,
    *,
    until: datetime,
    since: datetime | None = None,
    cutoff: datetime | None = None,
    limit: int | None = None,
    counts: dict[str, int] | None = None,
    on_report: Callable[[SourceReport], None] | None = None,
) -> HarvestResult:
    """Harvest each source in turn (one event loop each), the pre-filters' state loaded first. Each
    report's flat counts go into `counts` (a Run's) as it ends, then to `on_report`."""
    prefilters.load(store)
    result = HarvestResult()
    for source in sources:
        report = asyncio.run(
            harvest_source(store, source, prefilters, until=until, since=since, cutoff=cutoff, limit=limit)
        )
        result.reports.append(report)
        if counts is not None:
            counts.update(report.counts())
        if on_report is not None:
            on_report(report)
    return result
