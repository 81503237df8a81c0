"""Human labels for grader agreement: (response, criterion, met?) items from JSONL or CSV.

Two formats are read:
- generic JSONL or CSV with `response`, `criterion`, `label` (and optionally `question`, `points`);
  a label is met for true/1/yes/met/entailment and not met for false/0/no/not met/not_met/
  neutral/contradiction (case-insensitive);
- K-QA's NLI annotation CSV (`Question, llm_x, answer, claim, category_x, majority_label,
  label_0, label_1, label_2`): response = `answer`, criterion = `claim`, question = `Question`,
  label = `majority_label` (Entailment = met; Neutral and Contradiction = not met);
- HealthBench's meta-evaluation JSONL (`prompt`, `completion`, `rubric`, `binary_labels`, `category`):
  response = `completion`, criterion = `rubric`, question = the last user turn, label = the
  physicians' majority (a tie is not a label: the row is reported and skipped).
A row that cannot be read is an `InputFileError` naming the file and line; the others still load.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.interop import fields
from livemed.jsonl import parse_objects

MET = frozenset({"true", "1", "yes", "met", "entailment"})
NOT_MET = frozenset({"false", "0", "no", "not met", "not_met", "unmet", "neutral", "contradiction"})
KQA_COLUMNS = frozenset({"Question", "answer", "claim", "majority_label"})
META_EVAL_KEYS = frozenset({"completion", "rubric", "binary_labels"})


@dataclass(frozen=True)
class LabelItem:
    response: str
    criterion: str
    label: bool
    question: str = ""
    points: float = 1.0
    group: str = ""


def parse_label(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in MET:
        return True
    if text in NOT_MET:
        return False
    raise ValueError(f"label {value!r} is neither met nor not met")


def _meta_eval(row: dict[str, Any]) -> LabelItem:
    labels = row.get("binary_labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(v, bool) for v in labels):
        raise ValueError("'binary_labels' must be a non-empty list of booleans")
    met = sum(labels)
    if met * 2 == len(labels):
        raise ValueError(f"physicians are split {met}-{len(labels) - met}: no majority label")
    prompt = row.get("prompt")
    prompt = prompt if isinstance(prompt, list) else []
    users = [str(m.get("content", "")) for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
    completion, rubric = row.get("completion"), row.get("rubric")
    if not isinstance(completion, str) or not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("needs a 'completion' and a non-empty 'rubric'")
    question = users[-1] if users else ""
    return LabelItem(
        completion, rubric.strip(), met * 2 > len(labels), question, 1.0, str(row.get("category", ""))
    )


def _item(row: dict[str, Any], kqa: bool) -> LabelItem:
    if kqa:
        response, criterion, label = row.get("answer"), row.get("claim"), row.get("majority_label")
        question, group = row.get("Question") or "", row.get("llm_x") or ""
    else:
        response, criterion, label = row.get("response"), row.get("criterion"), row.get("label")
        question, group = row.get("question") or "", row.get("group") or ""
    if not isinstance(response, str) or not isinstance(criterion, str) or not criterion.strip():
        raise ValueError("needs a response and a non-empty criterion")
    if label is None or label == "":
        raise ValueError("missing label")
    points = _points(row.get("points"))
    return LabelItem(response, criterion.strip(), parse_label(label), str(question), points, str(group))


def _points(value: Any) -> float:
    """Optional points (default 1): a finite non-zero number, also when a CSV cell spells it."""
    if value is None or value == "":
        return 1.0
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"points: expected a number, got {value[:30]!r}") from None
    points = fields.points(value, "points")
    if points == 0:
        raise ValueError("points must not be 0")
    return points


def read_labels(path: Path) -> Iterator[LabelItem | InputFileError]:
    """Stream label items from a .jsonl or .csv file."""
    if not path.is_file():
        raise InputFileError(path, "no such file")
    if path.suffix.lower() == ".csv":
        yield from _read_csv(path)
    else:
        yield from _read_jsonl(path)


def _read_csv(path: Path) -> Iterator[LabelItem | InputFileError]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = set(reader.fieldnames or [])
        kqa = columns >= KQA_COLUMNS
        if not kqa and not {"response", "criterion", "label"} <= columns:
            raise InputFileError(
                path, "CSV needs columns response, criterion, label (or K-QA's NLI columns)", 1
            )
        for row in reader:
            try:
                yield _item(row, kqa)
            except ValueError as exc:
                yield InputFileError(path, str(exc), reader.line_num)


def _read_jsonl(path: Path) -> Iterator[LabelItem | InputFileError]:
    return parse_objects(path, _label_from)


def _label_from(data: dict[str, Any]) -> LabelItem:
    if data.keys() >= META_EVAL_KEYS:
        return _meta_eval(data)
    return _item(data, data.keys() >= KQA_COLUMNS)
