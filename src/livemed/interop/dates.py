"""Dates for imported benchmarks that carry none (HealthBench, K-QA).

livemed dates every case (the date is the contamination analysis), but these files have no
publication dates. The date is therefore either given (`--published YYYY-MM-DD`, recorded as
`date_field="option"`) or, failing that, the input file's modification time (recorded as
`date_field="file_mtime"`), and the command says which it used. Nothing is dated silently.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from livemed.errors import ConfigError, InputFileError


def resolve_published(option: str | None, path: Path) -> tuple[datetime, str]:
    """(date, basis): the `--published` date, else the file's modification time."""
    if option:
        try:
            day = date.fromisoformat(option)
        except ValueError:
            raise ConfigError(f"--published must be a date like 2025-05-07, got {option!r}") from None
        return datetime(day.year, day.month, day.day, tzinfo=UTC), "option"
    try:
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise InputFileError(path, f"cannot open: {exc.strerror}") from None
    return datetime.fromtimestamp(mtime, tz=UTC), "file_mtime"
