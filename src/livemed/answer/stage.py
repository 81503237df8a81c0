"""The answer stage over the store: every (case, sample) without an answer from a model gets one.

`answer_case` (`answer/ask.py`) stays pure of the store; `answer_all` feeds it through `run_stage`, so
the command is incremental: answers are keyed by answer id; a failed call leaves a Rejection (stage
"answer") but no answer, so the next run retries it, and the stale Rejection is deleted once the answer
exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, Protocol, TypeVar

from livemed.answer.ask import OfflineAnswerer, answer_case, answer_id, answer_model, rejection_id
from livemed.common.heap import frozen_heap
from livemed.domains import DomainPack
from livemed.models import LLM, Settings
from livemed.pipeline.runner import Feed, StageResult, batched, run_stage
from livemed.records import Answer, Case, Record
from livemed.store import Store

MAX_IN_FLIGHT = 4096  # items in flight per stage at most, whatever the models allow (memory)
OFFLINE_BATCH = 512  # an offline model's items per write (no calls in flight: fewer, larger writes)
# On PostgreSQL each batch is claimed, looked at again, written and given back: four or five round trips and
# the server's work on them, so larger batches (`grade` at 10k: 21.5-22.4 s against 25.4-26.9 s with
# 512). On SQLite 2,048 cost `grade` more CPU (12.9-14.3 against 11.1-13.2 s; docs/benchmarks.md).
OFFLINE_BATCH_POSTGRESQL = 2048


def offline_batch(store: Store) -> int:
    """An offline model's items per write on this store."""
    return OFFLINE_BATCH_POSTGRESQL if store.dialect == "postgresql" else OFFLINE_BATCH


def in_flight(model: object, default: int = 64) -> int:
    """How many items a stage keeps in flight for `model`: twice its `max_concurrency` (so a slot that
    frees finds the next call already waiting; rate limits queue the rest), at most MAX_IN_FLIGHT; an
    offline baseline does no I/O and gets `default`."""
    if isinstance(model, LLM):
        return min(MAX_IN_FLIGHT, 2 * model.engine.limits(model.model).max_concurrency)
    return default


@frozen_heap
async def answer_all(
    store: Store,
    cases: Iterable[Case] | Feed[Case],
    answerer: LLM | OfflineAnswerer,
    *,
    settings: Settings,
    samples: int = 1,
    batch_size: int | None = None,
    window: int | None = None,
    on_answers: Callable[[list[tuple[Case, Answer]]], None] | None = None,
    pack: DomainPack | None = None,
) -> StageResult:
    """Every (case, sample) without an answer from this model gets one (or a Rejection).

    Written `batch_size` items a transaction (default 64; `offline_batch` for an offline answerer,
    whose items never wait). Up to `window` items are in flight (default: `in_flight(answerer)`);
    `on_answers` is told of the answers each time a batch of them is written. `cases` may be a `Feed`
    another stage fills, or any iterable, read `CASE_CHUNK` cases at a time (memory bounded by the
    chunk, not by the store)."""
    model = answerer.id
    batch_size = batch_size or (64 if isinstance(answerer, LLM) else offline_batch(store))
    if isinstance(cases, Feed):
        return await _answer_feed(
            store, cases, answerer, settings, samples, batch_size, window, on_answers, pack
        )
    prefetch = getattr(answerer, "prefetch", None)  # offline/retrieval: one search per chunk (offline.py)

    def items() -> Iterator[tuple[Case, int]]:
        for chunk in batched(cases, CASE_CHUNK):
            keys = [(case, n) for case in chunk for n in range(samples)]
            answered = store.has("answer", [answer_id(case.id, model, n) for case, n in keys])
            _drop_stale_rejections(store, [(c.id, n) for c, n in keys], model, answered)
            if prefetch is not None:
                prefetch(
                    list({c.id: c for c, n in keys if answer_id(c.id, model, n) not in answered}.values())
                )
            yield from keys

    new: list[Answer] = []  # answers written since their rejections were last looked for

    def drop_stale() -> None:
        _drop_stale_rejections(store, [(a.case_id, a.sample) for a in new], model, {a.id for a in new})
        new.clear()

    def written(batch: list[tuple[tuple[Case, int], Sequence[Record]]]) -> None:
        answers = [(item[0], r) for item, records in batch for r in records if isinstance(r, Answer)]
        new.extend(a for _, a in answers)
        if len(new) >= 500:
            drop_stale()
        if on_answers is not None:
            on_answers(answers)

    result = await _answer_items(store, items(), answerer, settings, batch_size, window, written, pack)
    drop_stale()
    return result


CASE_CHUNK = 1000  # cases `answer_all` reads, checks and prefetches at a time


async def _answer_items(
    store: Store,
    items: Iterable[tuple[Case, int]] | Feed[tuple[Case, int]],
    answerer: LLM | OfflineAnswerer,
    settings: Settings,
    batch_size: int,
    window: int | None,
    written: Callable[[list[tuple[tuple[Case, int], Sequence[Record]]]], None],
    pack: DomainPack | None,
) -> StageResult:
    model = answerer.id

    async def work(item: tuple[Case, int]) -> list[Record]:
        return await answer_case(item[0], answerer, settings=settings, sample=item[1], pack=pack)

    return await run_stage(
        store,
        items,
        work,
        output_id=lambda item: answer_id(item[0].id, model, item[1]),
        output_kinds=["answer"],
        batch_size=batch_size,
        window=window or in_flight(answerer, batch_size),
        on_batch=written,
    )


async def _answer_feed(
    store: Store,
    cases: Feed[Case],
    answerer: LLM | OfflineAnswerer,
    settings: Settings,
    samples: int,
    batch_size: int,
    window: int | None,
    on_answers: Callable[[list[tuple[Case, Answer]]], None] | None,
    pack: DomainPack | None,
) -> StageResult:
    """`answer_all` for cases another stage puts in a feed while this one runs (`livemed eval`)."""
    keys: list[tuple[Case, int]] = []

    def samples_of(case: Case) -> list[tuple[Case, int]]:
        keys.extend(made := [(case, n) for n in range(samples)])
        return made

    def written(batch: list[tuple[tuple[Case, int], Sequence[Record]]]) -> None:
        if on_answers is not None:
            on_answers([(item[0], r) for item, records in batch for r in records if isinstance(r, Answer)])

    result = await _answer_items(
        store, cases.expand(samples_of), answerer, settings, batch_size, window, written, pack
    )
    for chunk in batched(keys, 500):
        _drop_stale_rejections(store, [(case.id, n) for case, n in chunk], answerer.id, None)
    return result


def _drop_stale_rejections(
    store: Store, keys: list[tuple[str, int]], model: str, answered: set[str] | None
) -> None:
    """Delete the Rejection of every (case, sample) that has an answer now (`answered`: the answer
    ids known to be stored; None: every one of `keys` is looked up)."""
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        ids = [answer_id(c, model, n) for c, n in chunk]
        found = store.has("answer", ids) if answered is None else answered.intersection(ids)
        candidates = [rejection_id(c, model, n) for (c, n), i in zip(chunk, ids, strict=True) if i in found]
        stale = store.has("rejection", candidates) if candidates else set()
        if stale:
            store.delete("rejection", sorted(stale))


class Answered(Protocol):
    """What planning reads of an answer: its id and its case (an `Answer`, or an `AnswerKey`)."""

    @property
    def id(self) -> str: ...

    @property
    def case_id(self) -> str: ...


A = TypeVar("A", bound=Answered)


class AnswerKey(NamedTuple):
    """A stored answer's id and case id, read from the index without its payload (`stored_answers`)."""

    id: str
    case_id: str


def stored_answers(store: Store, model: str | None = None) -> Iterator[AnswerKey]:
    """Every stored answer (of `model`, when given) as an `AnswerKey`, in id order: the order and the
    answers of `store.iter(Answer)`, without reading or validating a single payload."""
    for one, case_id in store.id_parents("answer"):
        if case_id is not None and (model is None or answer_model(one, case_id) == model):
            yield AnswerKey(one, case_id)
