"""MedQA (JSONL: question, options, answer_idx) and MedBullets (the user's CSV: link, question,
opa…ope, answer_idx, answer, explanation): multiple-choice items."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.jsonl import parse_objects
from livemed.judges.datasets.csvfile import csv_rows
from livemed.judges.datasets.items import ChoiceItem

LETTERS = "ABCDE"


def _choice(
    dataset: str, item_id: str, question: Any, options: dict[str, str], answer: Any, group: str = ""
) -> ChoiceItem:
    if not isinstance(question, str) or not question.strip():
        raise ValueError("missing field 'question'")
    if len(options) < 2:
        raise ValueError("fewer than two options")
    letter = str(answer or "").strip().upper()
    if letter not in options:
        raise ValueError(f"answer_idx {answer!r} is not one of the options {', '.join(options)}")
    return ChoiceItem(
        dataset=dataset, item_id=item_id, question=question, options=options, answer=letter, group=group
    )


def medqa_file(path: Path) -> Path:
    return path / "us_4options_test.jsonl" if path.is_dir() else path


def load_medqa(path: Path) -> Iterator[ChoiceItem | InputFileError]:
    """MedQA items, numbered by line (`medqa:<line>`); a bad line is an error naming file:line."""
    file = medqa_file(path)
    number = 0

    def parse(data: dict[str, Any]) -> ChoiceItem:
        nonlocal number
        number += 1
        options = data.get("options")
        if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
            raise ValueError("missing or malformed field 'options'")
        clean = {str(k).strip().upper(): v for k, v in options.items() if v.strip()}
        step = str(data.get("meta_info") or "").strip()  # the exam step: step1, step2&3
        return _choice("medqa", str(number), data.get("question"), clean, data.get("answer_idx"), step)

    yield from parse_objects(file, parse)


def medbullets_file(path: Path) -> Path:
    if path.is_dir():
        for name in ("medbullets_op5.csv", "medbullets_op4.csv", "medbullets.csv"):
            if (path / name).exists():
                return path / name
        raise InputFileError(path, "no medbullets_op5.csv, medbullets_op4.csv or medbullets.csv here")
    return path


def load_medbullets(path: Path) -> Iterator[ChoiceItem | InputFileError]:
    """MedBullets rows (4 or 5 options); a bad row is an error naming file:line, the rest load."""
    file = medbullets_file(path)
    for number, (line, row) in enumerate(
        csv_rows(file, ("question", "opa", "opb", "answer_idx"), "MedBullets"), 1
    ):
        options = {
            letter: str(row.get(f"op{letter.lower()}") or "").strip()
            for letter in LETTERS
            if str(row.get(f"op{letter.lower()}") or "").strip()
        }
        try:
            yield _choice("medbullets", str(number), row.get("question"), options, row.get("answer_idx"))
        except ValueError as exc:
            yield InputFileError(file, str(exc), line)
