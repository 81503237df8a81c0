"""Reviewers' labels: written one record each, taken back, exported and imported as JSONL.

A label's id names its queue, item and reviewer, so one reviewer's second verdict on an item replaces
the first, and two reviewers labelling at once write two records: nothing is lost. A verdict on a
rubric criterion (approve, edit, strike) also writes the rubric's next version
(`rubrics.versions.apply_change`); undoing it writes a version that takes the change back. Imported
labels are labels only: a rubric is changed in the app, where the reviewer sees it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from livemed.config import describe_validation_error
from livemed.errors import InputFileError, UserError
from livemed.jsonl import parse_objects, write_jsonl
from livemed.records import AuditSample, Criterion, Label
from livemed.records.review import VERDICTS, CriterionChange, Queue
from livemed.review.queues import get_item, label_key
from livemed.rubrics.versions import apply_change, undo_change
from livemed.store import Store

AUDIT_VERDICTS = frozenset({"met", "not met"})  # "unsure" is not a verdict on the criterion


def put_label(
    store: Store,
    reviewer: str,
    queue: Queue,
    item_id: str,
    verdict: str,
    note: str = "",
    *,
    edit: Criterion | None = None,
    judge: str | None = None,
) -> Label:
    """Record `reviewer`'s verdict on an item (checked to be in `queue`); returns the label."""
    if verdict not in VERDICTS[queue]:
        raise UserError(f"{verdict!r} is not a verdict of the {queue} queue ({', '.join(VERDICTS[queue])})")
    get_item(store, reviewer, queue, item_id, judge=judge)  # raises if it is not in the queue
    if queue == "criteria":
        _change_rubric(store, reviewer, item_id, verdict, edit)
    label = Label(reviewer=reviewer, queue=queue, item_id=item_id, verdict=verdict, note=note)
    store.put([label])
    return label


def edited(criterion: Criterion, text: str) -> Criterion:
    """`criterion` with new text (its axis, weight and polarity kept)."""
    text = " ".join(text.split())
    if not text:
        raise UserError("an edited criterion needs text")
    return criterion.model_copy(update={"text": text, "source_fact": criterion.source_fact})


def _change_rubric(store: Store, reviewer: str, item_id: str, verdict: str, edit: Criterion | None) -> None:
    case_id, _, criterion_id = item_id.partition("#")
    if verdict == "edit" and edit is None:
        raise UserError("an edit needs the criterion's new text")
    action = "approve" if verdict == "approve" else "edit" if verdict == "edit" else "strike"
    new = edit if verdict == "edit" else None
    apply_change(store, case_id, reviewer, CriterionChange(action=action, criterion_id=criterion_id, new=new))


def labels_of(store: Store, reviewer: str | None = None, queue: Queue | None = None) -> list[Label]:
    """The stored labels (of one reviewer, of one queue), oldest first."""
    ids = [
        label_id
        for label_id in store.ids(Label.kind)
        if (queue is None or label_key(label_id)[0] == queue)
        and (reviewer is None or label_key(label_id)[2] == reviewer)
    ]
    return sorted(store.get_many(Label, ids).values(), key=lambda label: label.labelled_at)


def undo_last(store: Store, reviewer: str) -> Label | None:
    """Remove `reviewer`'s newest label (and take back the rubric change it made); None if none."""
    mine = labels_of(store, reviewer)
    if not mine:
        return None
    last = mine[-1]
    if last.queue == "criteria":
        case_id, _, criterion_id = last.item_id.partition("#")
        undo_change(store, case_id, reviewer, criterion_id)
    store.delete(Label.kind, [last.id])
    return last


def audit_labels(store: Store, judge: str) -> list[Label]:
    """The met / not-met labels on the items of `judge`'s audit sample."""
    sample = store.get(AuditSample, f"audit_sample:{judge}")
    if sample is None:
        return []
    items = {item.grade_id for item in sample.items}
    return [
        label
        for label in labels_of(store, queue="audit")
        if label.item_id in items and label.verdict in AUDIT_VERDICTS
    ]


def export_labels(store: Store, path: Path) -> int:
    """Write every label to `path` as JSONL (one record a line, whole or none); how many."""
    return write_jsonl(labels_of(store), path)


def import_labels(store: Store, path: Path) -> tuple[int, list[InputFileError]]:
    """Read labels from a JSONL file (from `export_labels` or another annotation tool: `reviewer`,
    `queue`, `item_id`, `verdict`, optional `note`, `labelled_at`); store the good ones; a bad line is
    an error naming its line, the rest load."""
    good: list[Label] = []
    errors: list[InputFileError] = []
    for item in parse_objects(path, lambda data: _label(data, path)):
        if isinstance(item, InputFileError):
            errors.append(item)
        else:
            good.append(item)
    store.put(good)
    return len(good), errors


def _label(data: dict[str, object], path: Path) -> Label:
    data = {key: value for key, value in data.items() if key != "kind"}
    if data.get("source", "app") == "app":
        data["source"] = path.name
    try:
        label = Label.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"invalid label: {describe_validation_error(exc)}") from None
    if label.verdict not in VERDICTS[label.queue]:
        raise ValueError(f"{label.verdict!r} is not a verdict of the {label.queue} queue")
    return label
