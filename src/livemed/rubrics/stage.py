"""The rubric stage over a store: `write_rubric` for every case given, skipping those with a rubric.

The one place `livemed rubrics` and `livemed update` write rubrics:

```python
todo, verdicts = without_verdicts(store, cases)       # a rejection that is a verdict is not retried
result = await write_rubrics(store, todo, writer, pack=pack)
```

`cases` may be a `Feed` another stage fills while this one runs (`update`: cases as they are curated).
Once the stage has run, a case given that now has a rubric loses its stale rejection (an earlier
failed call, or a verdict tried again with `--retry-rejected`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from livemed.domains import DomainPack
from livemed.models import LLM
from livemed.pipeline.runner import Feed, StageResult, run_stage
from livemed.records import Case, Record, Rejection
from livemed.rubrics.write import OfflineWriter, rejection_id, write_rubric
from livemed.store import Store

BATCH_SIZE = 16


def rubric_id(case: Case) -> str:
    return f"rubric:{case.id}"


def rubric_verdicts(store: Store, cases: Sequence[Case]) -> set[str]:
    """The ids of the cases' rubric rejections that are verdicts (lint findings): not tried again
    unless asked; a rejection for a failed call is always tried again."""
    ids = [rejection_id(case.id) for case in cases]
    found = store.get_many(Rejection, sorted(store.has("rejection", ids)))
    return {i for i, r in found.items() if not r.call_failed}


def without_verdicts(store: Store, cases: Sequence[Case]) -> tuple[list[Case], set[str]]:
    """The cases to write rubrics for (less those whose rubric was rejected by a verdict), and the
    ids of those verdicts."""
    verdicts = rubric_verdicts(store, cases)
    return [case for case in cases if rejection_id(case.id) not in verdicts], verdicts


async def write_rubrics(
    store: Store,
    cases: Iterable[Case] | Feed[Case],
    writer: LLM | OfflineWriter,
    *,
    pack: DomainPack | None = None,
    batch_size: int = BATCH_SIZE,
    on_rubrics: Callable[[list[Case]], None] | None = None,
) -> StageResult:
    """A checked Rubric (or a Rejection) for every case of `cases` without a rubric, for `pack`'s axes,
    weights and themes (default: medical). `on_rubrics` is told of the cases of each written batch that
    got a rubric (`update` hands them to the answer stage). When the stage ends, the rejections of the
    cases given that now have a rubric are deleted."""
    given: list[Case] = []

    def keep(case: Case) -> list[Case]:
        given.append(case)
        return [case]

    items = cases.expand(keep) if isinstance(cases, Feed) else _kept(cases, given)

    def written(batch: list[tuple[Case, Sequence[Record]]]) -> None:
        if on_rubrics is not None:
            on_rubrics([case for case, made in batch if any(r.kind == "rubric" for r in made)])

    result = await run_stage(
        store,
        items,
        lambda case: write_rubric(case, writer, pack),
        output_id=rubric_id,
        output_kinds=["rubric"],
        batch_size=batch_size,
        on_batch=None if on_rubrics is None else written,
    )
    drop_stale_rejections(store, given)
    return result


def _kept(cases: Iterable[Case], given: list[Case]) -> Iterator[Case]:
    for case in cases:
        given.append(case)
        yield case


def drop_stale_rejections(store: Store, cases: Sequence[Case]) -> None:
    """Delete the rubric rejection of each case that has a rubric now."""
    done = store.has("rubric", [rubric_id(case) for case in cases])
    stale = store.has("rejection", [rejection_id(case.id) for case in cases if rubric_id(case) in done])
    if stale:
        store.delete("rejection", sorted(stale))
