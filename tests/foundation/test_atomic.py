"""`livemed.common.atomic`: a file or folder is complete or absent; a failed write is one line naming it.

And `pipeline.raise_first`, which reads the error of every finished task (two stages stopped by one
budget): asyncio reports none as "never retrieved".
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from livemed.common import atomic
from livemed.common.atomic import shown, staged_folder, write_text, writing_text
from livemed.errors import OutputError
from livemed.pipeline.runner import raise_first


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_file_is_renamed_into_place_with_the_umasks_permissions(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "new" / "a.txt"
    write_text(path, "hello\n")
    assert path.read_text() == "hello\n"
    assert path.stat().st_mode & 0o777 == 0o644  # like open("w"), not a private temporary's 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("old\n")
    with pytest.raises(RuntimeError, match="stopped mid-write"):
        _write_half(path)
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def _write_half(path: Path) -> None:
    with writing_text(path) as handle:
        handle.write("half of the new")
        raise RuntimeError("stopped mid-write")


def test_an_os_error_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / ("x" * 250)  # its temporary's name is too long for the file system
    with pytest.raises(OutputError) as raised:
        write_text(path, "hello\n")
    assert str(raised.value) == f"cannot write {path}: File name too long"
    assert list(tmp_path.iterdir()) == []
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match=f"cannot write {blocker / 'x' / 'y'}: {blocker} is a file"):
        write_text(blocker / "x" / "y", "")


def test_a_staged_folder_becomes_the_missing_folder_in_one_rename(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with staged_folder(out, last="manifest.json") as work:
        assert work.parent == tmp_path
        assert work.name.startswith(".export.")
        (work / "data").mkdir()
        (work / "data" / "rows.jsonl").write_text("{}\n")
        (work / "manifest.json").write_text("{}\n")
        assert not out.exists()  # nothing there until every file is written
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "data",
        "data/rows.jsonl",
        "manifest.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_a_failed_staged_folder_leaves_the_old_one_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "manifest.json").write_text("old manifest\n")
    (out / "cases.jsonl").write_text("old cases\n")
    with pytest.raises(RuntimeError, match="disk full"):
        _fill_half(out)
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "manifest.json": "old manifest\n",
        "cases.jsonl": "old cases\n",
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def _fill_half(out: Path) -> None:
    with staged_folder(out, last="manifest.json") as work:
        (work / "cases.jsonl").write_text("new cases, cut")
        raise RuntimeError("disk full")


def test_into_a_folder_with_files_the_last_file_goes_last(tmp_path: Path, monkeypatch: Any) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "manifest.json").write_text("old manifest\n")
    (out / "keep.txt").write_text("the user's\n")
    moves: list[str] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        moves.append(Path(dst).name)
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)  # type: ignore[attr-defined]
    with staged_folder(out, last="manifest.json") as work:
        for name in ("manifest.json", "b.jsonl", "a.jsonl"):
            (work / name).write_text(f"new {name}\n")
    assert moves == ["a.jsonl", "b.jsonl", "manifest.json"]
    assert (out / "manifest.json").read_text() == "new manifest.json\n"
    assert (out / "keep.txt").read_text() == "the user's\n"


def test_a_temporary_name_is_shown_as_the_name_it_will_have(tmp_path: Path) -> None:
    with staged_folder(tmp_path / "export") as work:
        assert shown(work / "cases.jsonl") == tmp_path / "export" / "cases.jsonl"


async def test_raise_first_reads_every_finished_tasks_error() -> None:
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    async def stop(message: str) -> None:
        raise RuntimeError(message)

    tasks = {asyncio.ensure_future(stop("answers")), asyncio.ensure_future(stop("grades"))}
    done, _ = await asyncio.wait(tasks)
    assert len(done) == 2
    with pytest.raises(RuntimeError, match=r"^(answers|grades)$"):
        raise_first(done)
    del tasks, done
    gc.collect()
    assert reported == []  # without reading the second error, asyncio reports it on collection
