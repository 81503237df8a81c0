"""Reading a user's CSV copy: each row with the line it starts on; a file without the columns is one error."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from pathlib import Path

from livemed.errors import InputFileError


def csv_rows(file: Path, required: Iterable[str], what: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(first line of the row, row) for every row; rows may span lines (quoted notes)."""
    try:
        handle = file.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise InputFileError(file, f"cannot open: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = set(required) - set(reader.fieldnames or [])
        if missing:
            raise InputFileError(file, f"not a {what} CSV: no column(s) {', '.join(sorted(missing))}", 1)
        line = reader.line_num + 1
        for row in reader:
            yield line, row
            line = reader.line_num + 1
