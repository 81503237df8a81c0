"""Reviewed rubric versions: a reviewer's approve, edit or strike makes version n+1 of a case's rubric.

Version 0 is the writer's `Rubric`, never changed, so scores on it stay reproducible. Every later
version is a `RubricVersion` holding the whole criteria list as the reviewer left it. Two reviewers
changing one rubric at once never lose a change: each writes the next version number only if no one
has (`Store.put_new`), and on a clash reads the newer version and applies its change to that.
`latest-approved` (for `grade` and `scores`) is the newest version of each case, or the writer's
rubric where no reviewer has acted (`chosen_versions`).
"""

from __future__ import annotations

from collections.abc import Sequence

from livemed.errors import UserError
from livemed.records import Criterion, Rubric, RubricVersion
from livemed.records.grading import RubricChoice
from livemed.records.review import CriterionChange
from livemed.store import Store

ATTEMPTS = 20  # clashes to retry: each one means another reviewer's change landed first


def latest_versions(store: Store, case_ids: Sequence[str]) -> dict[str, RubricVersion]:
    """The newest reviewed version of each case that has one."""
    newest: dict[str, RubricVersion] = {}
    for version in store.by_parents(RubricVersion, list(case_ids)):
        kept = newest.get(version.case_id)
        if kept is None or version.version > kept.version:
            newest[version.case_id] = version
    return newest


def chosen_versions(store: Store, case_ids: Sequence[str], choice: RubricChoice) -> dict[str, RubricVersion]:
    """The version of each case's rubric that `choice` picks, for the cases where it is not the
    writer's: none for `writer`; for `latest-approved`, `latest_versions` (a store without any
    version costs one indexed lookup)."""
    if choice == "writer" or not case_ids or not store.any_of(RubricVersion.kind):
        return {}
    return latest_versions(store, case_ids)


def reviewed(rubric: Rubric, version: RubricVersion | None) -> Rubric:
    """`rubric` with the criteria of `version` (the writer's rubric itself when there is none)."""
    if version is None:
        return rubric
    return rubric.model_copy(update={"criteria": list(version.criteria)})


def apply_change(
    store: Store, case_id: str, reviewer: str, change: CriterionChange, undone: CriterionChange | None = None
) -> RubricVersion:
    """Write the next version of `case_id`'s rubric with `change` applied (for an undo, `undone` is the
    change taken back); the version written."""
    base = store.get(Rubric, f"rubric:{case_id}")
    if base is None:
        raise UserError(f"case {case_id}: no rubric to review")
    for _ in range(ATTEMPTS):
        current = latest_versions(store, [case_id]).get(case_id)
        criteria = list(current.criteria if current else base.criteria)
        approved = list(current.approved if current else [])
        made = RubricVersion(
            case_id=case_id,
            version=(current.version if current else 0) + 1,
            criteria=_changed(criteria, change, undone),
            reviewer=reviewer,
            change=change,
            approved=_approved(approved, change, undone),
        )
        if store.put_new(made):
            return made
    raise UserError(f"case {case_id}: the rubric kept changing under this edit; try again")


def undo_change(store: Store, case_id: str, reviewer: str, criterion_id: str) -> RubricVersion | None:
    """Take back `reviewer`'s newest change of the criterion `criterion_id` (the id it had before the
    change), as a new version: an approval is withdrawn, an edit's old text and a struck criterion come
    back (at the end of the list if the rubric changed around it). None if there is nothing to undo."""
    mine = [
        v
        for v in store.by_parents(RubricVersion, [case_id])
        if v.reviewer == reviewer and v.change.criterion_id == criterion_id and v.change.action != "undo"
    ]
    if not mine:
        return None
    made = max(mine, key=lambda v: v.version)
    before = _version_before(store, case_id, made.version)
    old = next((c for c in before if c.id == criterion_id), None)
    if old is None:
        return None
    return apply_change(
        store,
        case_id,
        reviewer,
        CriterionChange(action="undo", criterion_id=criterion_id, new=old),
        made.change,
    )


def _version_before(store: Store, case_id: str, version: int) -> list[Criterion]:
    if version == 1:
        base = store.get(Rubric, f"rubric:{case_id}")
        return list(base.criteria) if base else []
    earlier = store.get(RubricVersion, f"rubric_version:{case_id}:{version - 1:05d}")
    return list(earlier.criteria) if earlier else []


def _changed(
    criteria: list[Criterion], change: CriterionChange, undone: CriterionChange | None
) -> list[Criterion]:
    if change.action == "undo":
        return _restored(criteria, change, undone)
    index = next((i for i, c in enumerate(criteria) if c.id == change.criterion_id), None)
    if index is None:
        raise UserError(f"criterion {change.criterion_id} is not in the current rubric (changed by another)")
    if change.action == "edit":
        if change.new is None:
            raise UserError("an edit needs the new criterion")
        if any(c.id == change.new.id for i, c in enumerate(criteria) if i != index):
            raise UserError("the edited criterion repeats another criterion of the rubric")
        criteria[index] = change.new
    elif change.action == "strike":
        del criteria[index]
    if not any(c.weight > 0 for c in criteria):
        raise UserError("a rubric needs at least one positive criterion: this change would leave none")
    return criteria


def _restored(
    criteria: list[Criterion], change: CriterionChange, undone: CriterionChange | None
) -> list[Criterion]:
    """The criteria with an undone change taken back: an edit's new criterion is replaced by the old
    one, a struck one is put back; an undone approval leaves the criteria as they are."""
    if undone is None or change.new is None:
        raise UserError("an undo needs the change it takes back")
    if undone.action == "edit" and undone.new is not None:
        return [change.new if c.id == undone.new.id else c for c in criteria]
    if undone.action == "strike" and all(c.id != change.new.id for c in criteria):
        return [*criteria, change.new]
    return criteria


def _approved(
    approved: list[str], change: CriterionChange, undone: CriterionChange | None = None
) -> list[str]:
    if change.action == "undo":
        taken = {undone.criterion_id, undone.new.id if undone and undone.new else ""} if undone else set()
        return [i for i in approved if i not in taken]
    kept = [i for i in approved if i != change.criterion_id]
    if change.action == "approve":
        return [*kept, change.criterion_id]
    if change.action == "edit" and change.new is not None:
        return [*kept, change.new.id]  # the reviewer wrote it
    return kept
