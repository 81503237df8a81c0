"""The criterion ids of stored rubrics, for the plans that need only them (has every criterion of an
answer been graded already?), without parsing every rubric's payload on every run.

A criterion's id is the hash of its text, axis and weight (`criterion_key_id`); a grade's id holds
it. Reading them from the rubrics means parsing each rubric's whole payload: at 10k examples that
was most of the time `grade` with nothing to do spent on planning. So the ids of each rubric are
kept in run state (namespace `rubric-criteria`) with the rubric's write time, and used while the
stored rubric still has that write time. A rubric written again (every upsert stamps a new time)
has its payload read again and its entry replaced; an entry of a deleted rubric is never asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from livemed.records import Rubric
from livemed.records.grading import RubricChoice, criterion_key_id
from livemed.rubrics.versions import chosen_versions
from livemed.store import Store

NAMESPACE = "rubric-criteria"


class _CriterionKey(TypedDict):
    text: str
    axis: str
    weight: int


class _RubricKeys(TypedDict):
    criteria: list[_CriterionKey]


_RUBRIC_KEYS = TypeAdapter(_RubricKeys)


def criterion_ids(store: Store, rubric_ids: Sequence[str]) -> dict[str, list[str]]:
    """The ids of the criteria of each stored rubric among `rubric_ids`, in the rubric's order
    (missing rubrics left out): from run state where the rubric has not been written since, from
    its payload otherwise (and then kept for the next run, in one transaction)."""
    written = {
        rubric_id: at.isoformat() for rubric_id, at in store.updated_at(Rubric.kind, rubric_ids).items()
    }
    kept = store.state_many(NAMESPACE, list(written))
    found: dict[str, list[str]] = {}
    for rubric_id, at in written.items():
        ids = _ids_of(kept.get(rubric_id), at)
        if ids is not None:
            found[rubric_id] = ids
    stale = [rubric_id for rubric_id in written if rubric_id not in found]
    if stale:
        fresh = {
            rubric_id: [criterion_key_id(c["text"], c["axis"], c["weight"]) for c in view["criteria"]]
            for rubric_id, view in store.fields_many(Rubric.kind, stale, _RUBRIC_KEYS)
        }
        found.update(fresh)
        entries = {r: {"written": written[r], "ids": " ".join(ids)} for r, ids in fresh.items()}
        store.state_set_many(NAMESPACE, entries)
    return found


def chosen_criterion_ids(
    store: Store, case_ids: Sequence[str], choice: RubricChoice = "writer"
) -> dict[str, list[str]]:
    """`criterion_ids` of these cases' rubrics (keyed by the writer rubric's id), with the criteria of
    the version `choice` picks where it is a reviewed one (`rubrics.versions.chosen_versions`): an
    edited criterion has a new id (its text's hash), a struck one is gone, the rest keep theirs."""
    found = criterion_ids(store, [f"rubric:{c}" for c in case_ids])
    for case_id, version in chosen_versions(store, case_ids, choice).items():
        rubric_id = f"rubric:{case_id}"
        if rubric_id in found:  # a version without its writer's rubric is not graded (no rubric)
            found[rubric_id] = [c.id for c in version.criteria]
    return found


def _ids_of(entry: Any, written: str) -> list[str] | None:
    """The ids an entry of run state keeps (hex hashes, one space between two), if it was made from
    the rubric as written at `written`."""
    if not isinstance(entry, dict) or entry.get("written") != written:
        return None
    ids = entry.get("ids")
    return ids.split(" ") if isinstance(ids, str) and ids else None
