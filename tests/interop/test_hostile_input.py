"""Hostile input files: a line escaping an unpaired surrogate is one bad line (file:line) and the
good lines import, with every importer; a binary file is one line, "FILE: not a text file", exit 2."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from livemed.jsonl import dump_line
from livemed.records import Case, Doc
from livemed.store import Store
from tests.foundation.factories import doc
from tests.interop.test_healthbench_import import good

SURROGATE = "bad \ud800 text"  # json.dumps writes it as the escape "\ud800": no character
KQA = {
    "Question": "Is it gout?",
    "Free_form_answer": "Probably. See a doctor.",
    "Must_have": ["It may be gout"],
}


def invoke(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed program (exit codes and stderr as a user sees them), on a store in `tmp_path`."""
    program = shutil.which("livemed", path=str(Path(sys.executable).parent))
    if program is None:
        pytest.skip("the livemed program is not installed next to this Python")
    command = [program, "--store", str(tmp_path / "s.db"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def healthbench_lines() -> list[str]:
    bad = good("sur", prompt=[{"role": "user", "content": SURROGATE}])
    return [json.dumps(good("g1")), json.dumps(bad), json.dumps(good("g2"))]


def kqa_lines() -> list[str]:
    return [
        json.dumps(KQA),
        json.dumps({**KQA, "Question": SURROGATE}),
        json.dumps({**KQA, "Question": "Gout?"}),
    ]


def livemed_lines() -> list[str]:
    bad = json.dumps({"kind": "doc", **doc("2").model_dump(mode="json"), "text": SURROGATE})
    return [dump_line(doc("1")), bad, dump_line(doc("3"))]


IMPORTS: dict[str, tuple[list[str], Any]] = {
    "import-healthbench --workers 0": (["import-healthbench", "--workers", "0"], healthbench_lines),
    "import-healthbench --workers 2": (["import-healthbench", "--workers", "2"], healthbench_lines),
    "import-kqa": (["import-kqa"], kqa_lines),
    "import": (["import"], livemed_lines),
}


@pytest.mark.parametrize("name", IMPORTS)
def test_a_line_with_an_unpaired_surrogate_is_one_bad_line_and_the_rest_imports(
    tmp_path: Path, name: str
) -> None:
    command, lines = IMPORTS[name]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines()) + "\n", encoding="utf-8")
    assert "\\ud800" in path.read_text(encoding="utf-8")
    dated = ["--published", "2025-01-01"] if command[0] != "import" else []
    result = invoke(tmp_path, command[0], str(path), *command[1:], *dated)
    assert result.returncode == 1, result.stderr
    [skipped] = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert re.fullmatch(
        rf"skipped {re.escape(str(path))}:2: invalid JSON: unpaired surrogate \\ud800 \(no character\) at "
        r"column \d+",
        skipped,
    ), skipped
    with Store(tmp_path / "s.db") as store:
        stored = store.count()
    assert stored.get("doc" if command[0] == "import" else "case") == 2


def test_eval_of_a_file_with_an_unpaired_surrogate_evaluates_the_good_lines(tmp_path: Path) -> None:
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join(healthbench_lines()) + "\n", encoding="utf-8")
    result = invoke(
        tmp_path, "eval", str(path), "-m", "offline/reference", "--judge", "offline/lexical",
        "--published", "2025-01-01",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr  # the bad line is told at the end; the rest is scored
    assert "Traceback" not in result.stderr
    assert f"skipped {path}:2: invalid JSON: unpaired surrogate \\ud800" in result.stderr
    assert "imported 2 case(s) with rubrics; 1 bad line(s)" in result.stdout
    with Store(tmp_path / "s.db") as store:
        assert sorted(c.source_id for c in store.iter(Case)) == ["g1", "g2"]
        assert store.count().get("answer") == 2


def binary(path: Path) -> Path:
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40 + b"\n" * 2719)
    return path


COMMANDS: dict[str, list[str]] = {
    "import": ["import"],
    "import --kind doc": ["import", "--kind", "doc"],
    "import-healthbench": ["import-healthbench", "--published", "2025-01-01"],
    "import-kqa": ["import-kqa"],  # no --published: nothing about the file's dates comes first
    "eval": ["eval", "-m", "offline/reference", "--judge", "offline/lexical"],
    "eval --format kqa": ["eval", "--format", "kqa", "-m", "offline/reference", "--judge", "offline/lexical"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_binary_file_is_one_line_not_a_text_file(tmp_path: Path, name: str) -> None:
    path = binary(tmp_path / "data.jsonl")
    command = COMMANDS[name]
    result = invoke(tmp_path, command[0], str(path), *command[1:])
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: {path}: not a text file (NUL bytes in its first 8 KiB)"]
    assert not (tmp_path / "s.db").exists() or Store(tmp_path / "s.db").count() == {}


def test_judges_data_with_a_binary_dataset_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "data" / "medqa").mkdir(parents=True)
    path = binary(tmp_path / "data" / "medqa" / "us_4options_test.jsonl")
    result = invoke(tmp_path, "judges", "build", "--dataset", "medqa", "--path", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"error: {path}: not a text file (NUL bytes in its first 8 KiB)"]


def test_what_is_text() -> None:
    from livemed.jsonl import not_text

    text = '{"kind": "doc", "text": "Fieber 39,5 °C — 😀"}\n'.encode()
    assert not_text(text * 300) is None
    assert not_text((text * 300)[:8190]) is None  # a character cut at the end of the block is no fault
    assert not_text(text * 20 + b'{"a": "caf\xe9"}\n' + text * 20) is None  # one mis-encoded line: text
    assert not_text("U+FFFD \ufffd written in the file".encode() * 10) is None
    assert not_text(text + b"\x00") == "NUL bytes in its first 8 KiB"
    assert not_text(bytes(range(128, 256)) * 8) == "over 1 in 10 bytes of its first 8 KiB not UTF-8"
    assert not_text(b"") is None


def test_a_latin1_line_in_a_text_file_is_still_one_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_bytes((dump_line(doc("1")) + "\n").encode() + b'{"kind": "doc", "text": "caf\xe9"}\n')
    result = invoke(tmp_path, "import", str(path))
    assert result.returncode == 1, result.stderr
    assert f"skipped {path}:2: line is not valid UTF-8" in result.stderr
    with Store(tmp_path / "s.db") as store:
        assert [d.source_id for d in store.iter(Doc)] == ["1"]
