"""Small interop helpers: evidence corpora, dates for undated imports, K-QA advice splitting."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from livemed.errors import ConfigError, InputFileError
from livemed.interop.dates import resolve_published
from livemed.interop.kqa import advice_elements, read_kqa


def test_published_comes_from_the_option_or_the_file_time(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text("")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    assert resolve_published("2025-05-07", path) == (datetime(2025, 5, 7, tzinfo=UTC), "option")
    assert resolve_published(None, path) == (datetime.fromtimestamp(1_700_000_000, tz=UTC), "file_mtime")
    with pytest.raises(ConfigError, match="--published"):
        resolve_published("May 2025", path)


def test_kqa_advice_keeps_bullet_lead_ins() -> None:
    answer = (
        "A white tongue is usually harmless. It may need care.\n"
        "Seek medical attention if:\n- It lasts 2 weeks\n- It hurts"
    )
    assert advice_elements(answer) == [
        "A white tongue is usually harmless.",
        "It may need care.",
        "Seek medical attention if: It lasts 2 weeks",
        "Seek medical attention if: It hurts",
    ]


def test_kqa_rows_without_an_answer_are_errors_with_a_line(tmp_path: Path) -> None:
    path = tmp_path / "kqa.jsonl"
    good = {"Question": "Is it gout?", "Free_form_answer": "Probably.", "Must_have": ["It may be gout"]}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"Question": "Unanswered?"}) + "\n")
    first, second = read_kqa(path, published=datetime(2024, 1, 1, tzinfo=UTC), date_field="option")
    assert not isinstance(first, InputFileError)
    assert first.must_have == ["It may be gout"]
    assert first.case.advice == ["Probably."]
    assert isinstance(second, InputFileError)
    assert second.line == 2
