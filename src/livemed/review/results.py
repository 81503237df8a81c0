"""The app's `/results` page: labels per reviewer, the grader's agreement with the reviewers, and the
scores corrected by their labels (computed in `judges/reviewed.py` and `score/corrected.py`; shown here).

Each section says why it is empty (no audit sample, no labels yet) rather than show a number it has not.
The corrected scores read every verdict of the grader (`score.corrected.scored_frame`, seconds at 100k
grades) and the labels only on the sample: `ReviewResults` keeps the verdicts' part until the store's
grades, answers, rubrics or audit samples change (`Store.stamp`), so a label costs only the labels' part.
The app computes them in a worker process of its own (`WorkerResults`): that work is CPU-bound Python,
and in the app's process it would hold the GIL that every page's store reads wait for.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from livemed.errors import UserError
from livemed.judges.certification import shown
from livemed.judges.reviewed import agreement_rows, notes, reviewed_agreement
from livemed.records import Label
from livemed.review.queues import audit_sample, label_key
from livemed.score.corrected import FRAME_KINDS, Frame, corrected_scores, scored_frame
from livemed.store import Store

AGREEMENT_COLUMNS = ["comparison", "macro-F1", "Cohen's kappa", "accuracy"]
CORRECTED_COLUMNS = ["model", "answers", "raw", "corrected [95% CI]", "labels only [95% CI]", "labels"]


class ReviewResults:
    """`/results`' sections for the grader under audit (the only audit sample when `judge` is None);
    what the verdicts' frame of the correction was, per grader, until `Store.stamp` of what it read
    changes (an error of it, such as verdicts newer than the sample, is kept the same way). The stamp
    reads every verdict's write time: it is read again at most every `recheck_s` seconds."""

    def __init__(self, recheck_s: float = 0.0) -> None:
        self.recheck_s = recheck_s
        self.frames: dict[str, tuple[float, Any, Frame | UserError]] = {}  # (checked, stamp, frame)

    def __call__(self, store: Store, judge: str | None) -> Mapping[str, Any]:
        sections = list(label_counts(store, judge)["sections"])
        try:
            grader = audit_sample(store, judge).judge
        except UserError as exc:
            return {"sections": [*sections, _empty("Agreement with the reviewers", str(exc))]}
        sections.append(_agreement(store, grader))
        sections.append(_corrected(store, grader, self.frame(store, grader)))
        return {"sections": sections}

    def frame(self, store: Store, judge: str) -> Frame | UserError:
        now, kept = time.monotonic(), self.frames.get(judge)
        if kept is not None and now - kept[0] < self.recheck_s:
            return kept[2]
        stamp = store.stamp(FRAME_KINDS)
        made = kept[2] if kept is not None and kept[1] == stamp else _frame_or_error(store, judge)
        self.frames[judge] = (now, stamp, made)
        return made


def _frame_or_error(store: Store, judge: str) -> Frame | UserError:
    try:
        return scored_frame(store, judge)
    except UserError as exc:
        return exc


class WorkerResults:
    """`ReviewResults` computed in one worker process (started at the first call, at a lower priority),
    which keeps them, and so the verdicts' frame, between calls; it opens the store by its URL. A
    worker that died is started again at the next call."""

    def __init__(self, url: str, recheck_s: float = 0.0) -> None:
        self.url, self.recheck_s = url, recheck_s
        self.pool: ProcessPoolExecutor | None = None
        self.starting = threading.Lock()

    def __call__(self, store: Store, judge: str | None) -> Mapping[str, Any]:
        try:
            return self._worker().submit(_in_worker, self.url, judge, self.recheck_s).result()
        except BrokenProcessPool:
            self.close()
            raise

    def _worker(self) -> ProcessPoolExecutor:
        with self.starting:
            if self.pool is None:
                spawn = multiprocessing.get_context("spawn")  # the app's threads are not forked
                self.pool = ProcessPoolExecutor(max_workers=1, mp_context=spawn, initializer=_lower_priority)
            return self.pool

    def close(self) -> None:
        with self.starting:
            pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _lower_priority() -> None:
    """The worker's CPU goes to the pages first: it runs at a lower priority (nice 10) where it can."""
    with contextlib.suppress(AttributeError, OSError):
        os.nice(10)


_IN_WORKER: dict[str, tuple[Store, ReviewResults]] = {}  # a worker's store and results, by URL


def _in_worker(url: str, judge: str | None, recheck_s: float) -> Mapping[str, Any]:
    kept = _IN_WORKER.get(url)
    if kept is None:
        kept = _IN_WORKER[url] = (Store(url), ReviewResults(recheck_s))
    return kept[1](kept[0], judge)


def label_counts(store: Store, judge: str | None) -> Mapping[str, Any]:
    """The default of `/results`: how many labels each reviewer gave in each queue."""
    counts = Counter((queue, reviewer) for queue, _, reviewer in map(label_key, store.ids(Label.kind)))
    rows = [[queue, reviewer, str(n)] for (queue, reviewer), n in sorted(counts.items())]
    section = {"title": "Labels", "columns": ["queue", "reviewer", "labels"], "rows": rows, "note": ""}
    return {"sections": [section]}


def _empty(title: str, note: str) -> dict[str, Any]:
    return {"title": title, "columns": [], "rows": [], "note": note}


def _agreement(store: Store, judge: str) -> dict[str, Any]:
    title = f"Agreement of {judge} with the reviewers"
    try:
        data = reviewed_agreement(store, judge)
    except UserError as exc:
        return _empty(title, str(exc))
    rows = [
        [name, shown(f["macro_f1"]), shown(f["cohen_kappa"]), shown(f["accuracy"])]
        for name, f, _ in agreement_rows(data)
    ]
    return {"title": title, "columns": AGREEMENT_COLUMNS, "rows": rows, "note": " · ".join(notes(data))}


def _corrected(store: Store, judge: str, frame: Frame | UserError) -> dict[str, Any]:
    title = f"Scores by {judge} corrected by the reviewers' labels (unclipped means)"
    if isinstance(frame, UserError):
        return _empty(title, str(frame))
    result = corrected_scores(store, judge, frame=frame)
    rows = [
        [
            s.model,
            str(s.answers),
            f"{s.raw:.3f}",
            _interval(s.corrected, s.ci_low, s.ci_high),
            _interval(s.classical, s.classical_low, s.classical_high),
            str(s.labels),
        ]
        for s in result.scores
    ]
    few = [f"{s.model}: {s.too_few}" for s in result.scores if s.too_few]
    note = f"{result.labelled} of {result.sampled} sampled verdicts labelled"
    note += "".join(f" · {line}" for line in few)
    return {"title": title, "columns": CORRECTED_COLUMNS, "rows": rows, "note": note}


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "–"
    if low is None or high is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"
