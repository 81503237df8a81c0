"""Writes that are complete or absent.

A file is written under a hidden temporary name beside it (`.NAME.<random>.partial`) and renamed into
place when it is whole (`os.replace`: atomic within one file system); a folder of files is filled the
same way, as a hidden sibling folder renamed into place. An error, a full disk or Ctrl-C leaves the old
file (or nothing) and removes the temporary one, never half a file; a `kill -9` mid-write leaves at
most the hidden temporary. Every `OSError` on the way is one `OutputError` line naming the file.

```python
write_text(path, text)
with writing_text(path) as handle:                  # a stream of lines
    handle.write(line)
with temporary_path(path) as tmp:                # a library that writes to a path itself
    pq.write_table(table, tmp)
with staged_folder(out, last="manifest.json") as work:  # `out` gets every file, or none of them
    (work / "cases.jsonl").write_text(...)
```

Imports nothing of livemed but `errors`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from livemed.errors import OutputError


def os_error_line(exc: OSError) -> str:
    """What went wrong and where, in one line: `afile/x: Not a directory`."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason


_TEMPORARY = re.compile(r"\.(.+)\.[0-9a-f]{12}\.partial")


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Turn an `OSError` of the block into one `OutputError` line naming `path` (a file in a staged
    folder by the name it will have)."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise OutputError(f"cannot write {shown(path)}: {reason}") from exc


def shown(path: Path) -> Path:
    """`path` with each temporary name in it (`_sibling`) as the name it will have."""
    return Path(*(m.group(1) if (m := _TEMPORARY.fullmatch(part)) else part for part in path.parts))


def make_parent(path: Path) -> None:
    """Make the folder `path` goes in; a file where a folder should be is one line naming it."""
    _no_file_above(path)
    with naming(path):
        path.parent.mkdir(parents=True, exist_ok=True)


def check_writable(path: Path) -> None:
    """Fail now, in one line, where writing `path` later would: a file where a folder should be, or a
    nearest existing folder this process may not write into."""
    _no_file_above(path)
    existing = next((folder for folder in path.parents if folder.exists()), Path("."))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: {existing} is not writable")


def _no_file_above(path: Path) -> None:
    for folder in reversed(path.parents):
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"cannot write {shown(path)}: {shown(folder)} is a file, not a folder")


def _sibling(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.partial")


@contextmanager
def temporary_path(path: Path) -> Iterator[Path]:
    """A path beside `path` for the block to write; renamed onto `path` when the block ends, removed
    if it raises."""
    make_parent(path)
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder")
    tmp = _sibling(path)
    with naming(path):
        try:
            yield tmp
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):  # gone (renamed), or never made: the error is the body's
                tmp.unlink()


@contextmanager
def writing_text(path: Path, *, newline: str | None = None) -> Iterator[TextIO]:
    """`path` opened for writing UTF-8 text, under its temporary name until the block ends."""
    with (
        temporary_path(path) as tmp,
        naming(path),
        tmp.open("x", encoding="utf-8", newline=newline) as handle,
    ):
        yield handle


def write_text(path: Path, text: str) -> Path:
    with writing_text(path) as handle:
        handle.write(text)
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    with temporary_path(path) as tmp, naming(path), tmp.open("xb") as handle:
        handle.write(data)
    return path


@contextmanager
def staged_folder(out: Path, *, last: str | None = None) -> Iterator[Path]:
    """A hidden folder beside `out` for the block to fill; when the block ends it becomes `out`.

    A missing or empty `out` is replaced by it in one rename. An `out` that holds files already gets
    the new files moved in one by one (renames only, nothing left to write): its old `last` file (an
    export's manifest) is removed first and the new one moved in after every other file, so a folder
    with a `last` file always holds the export that file describes. If the block raises, `out` is
    left as it was and the hidden folder is removed.
    """
    if out.exists() and not out.is_dir():
        raise OutputError(f"cannot write {out}: it is a file, not a folder")
    make_parent(out)
    work = _sibling(out)
    with naming(out):
        try:
            work.mkdir()
            yield work
            _move_in(work, out, last)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _move_in(work: Path, out: Path, last: str | None) -> None:
    if out.is_dir() and any(out.iterdir()):
        _replace_files(work, out, last)
        return
    if out.is_dir():
        out.rmdir()
    os.rename(work, out)


def _replace_files(work: Path, out: Path, last: str | None) -> None:
    files = sorted(p.relative_to(work) for p in work.rglob("*") if p.is_file())
    if last is not None:
        (out / last).unlink(missing_ok=True)
        files = [p for p in files if p.as_posix() != last] + [p for p in files if p.as_posix() == last]
    for name in files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(work / name, out / name)


__all__ = [
    "check_writable",
    "make_parent",
    "naming",
    "os_error_line",
    "staged_folder",
    "temporary_path",
    "write_bytes",
    "write_text",
    "writing_text",
]
