"""Contamination analysis on scores livemed did not make: a CSV/JSONL file of per-item results, or code.

Each row is one model's score on one item with the item's publication date. The rows become the
same `CaseScore` rows the store path builds (a model's several rows on an item — samples — are
averaged, so every item weighs the same) and go through `contamination.analyse` unchanged.

A row with a missing or unparseable date, a bad score, no item id or no model is left out and
reported (`LeftOut`, with its file line), never dated or scored by guess. A row whose date
disagrees with an earlier row of the same item is left out too.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from livemed.analysis.contamination import AnalysisSettings, ContaminationResult, analyse
from livemed.analysis.cutoffs import CutoffEntry, load_cutoffs
from livemed.analysis.inputs import CaseScore
from livemed.errors import ConfigError, InputFileError

FIELDS = ("item_id", "published", "model", "score")
TRUE_FALSE = {"true": 1.0, "false": 0.0}
SHOWN = 3  # left-out rows named per reason


@dataclass(frozen=True)
class RawRow:
    """One row as read: its line (file line, or 1-based position) and the four values, unparsed."""

    line: int
    item_id: Any
    published: Any
    model: Any
    score: Any
    error: str = ""  # a line that could not be read at all (not JSON, not an object)


@dataclass(frozen=True)
class LeftOut:
    line: int
    item_id: str
    reason: str  # "missing date", "bad date", "bad score", "missing score", …
    detail: str = ""


@dataclass
class ExternalScores:
    """The (model, item) scores read from one input, and what was left out of them."""

    origin: str
    rows: list[CaseScore] = field(default_factory=list)
    rows_read: int = 0
    left_out: list[LeftOut] = field(default_factory=list)
    sha256: str | None = None
    columns: dict[str, str] = field(default_factory=dict)

    def context(self) -> dict[str, Any]:
        """The input's provenance, for the JSON tables' summary and the report."""
        return {
            "scores_file": Path(self.origin).name,
            "scores_sha256": self.sha256,
            "rows_read": self.rows_read,
            "rows_left_out": len(self.left_out),
            "left_out_by_reason": dict(Counter(x.reason for x in self.left_out)),
            "columns": dict(self.columns),
        }

    def left_out_lines(self) -> list[str]:
        """Per reason: the count and the first few items, each with file:line."""
        by_reason: dict[str, list[LeftOut]] = defaultdict(list)
        for item in self.left_out:
            by_reason[item.reason].append(item)
        out = []
        for reason, items in by_reason.items():
            named = ", ".join(
                f"{self.origin}:{x.line} ({x.item_id or 'no id'}{': ' + x.detail if x.detail else ''})"
                for x in items[:SHOWN]
            )
            more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
            out.append(f"{reason}: {len(items)} row(s): {named}{more}")
        return out


def parse_columns(options: Iterable[str]) -> dict[str, str]:
    """`--column NAME=COLUMN` options on top of the default names (each field's own name)."""
    columns = {name: name for name in FIELDS}
    for option in options:
        name, sep, column = option.partition("=")
        name, column = name.strip(), column.strip()
        if not sep or not column:
            raise ConfigError(f"--column takes NAME=COLUMN (e.g. score=acc), got {option!r}")
        if name not in FIELDS:
            raise ConfigError(f"--column: unknown name {name!r} (known: {', '.join(FIELDS)})")
        columns[name] = column
    return columns


def parse_published(value: Any) -> datetime:
    """An aware datetime from an ISO date or datetime (naive means UTC); ValueError when unusable."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO date, got {type(value).__name__}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO date: {value[:40]!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_score(value: Any) -> float:
    """A finite number, a boolean, or the text true/false/1/0 (or any number); ValueError otherwise."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and value.strip().lower() in TRUE_FALSE:
        return TRUE_FALSE[value.strip().lower()]
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ValueError(f"not a number or true/false: {value[:40]!r}") from None
    else:
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check(row: RawRow) -> tuple[str, str, datetime, float] | LeftOut:
    """The parsed row, or why it is left out."""
    if row.error:
        return LeftOut(row.line, "", "unreadable line", row.error)
    item = "" if _blank(row.item_id) else str(row.item_id).strip()
    if not item:
        return LeftOut(row.line, "", "missing item id")
    if _blank(row.model):
        return LeftOut(row.line, item, "missing model")
    if _blank(row.published):
        return LeftOut(row.line, item, "missing date")
    try:
        published = parse_published(row.published)
    except ValueError as exc:
        return LeftOut(row.line, item, "bad date", str(exc))
    if _blank(row.score):
        return LeftOut(row.line, item, "missing score")
    try:
        score = parse_score(row.score)
    except ValueError as exc:
        return LeftOut(row.line, item, "bad score", str(exc))
    return item, str(row.model).strip(), published, score


def collect(raw: Iterable[RawRow], origin: str) -> ExternalScores:
    """Check every row, then average each model's rows per item (sorted like the store path's rows)."""
    result = ExternalScores(origin=origin)
    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    dated: dict[str, tuple[datetime, int]] = {}
    for row in raw:
        result.rows_read += 1
        checked = _check(row)
        if isinstance(checked, LeftOut):
            result.left_out.append(checked)
            continue
        item, model, published, score = checked
        first = dated.setdefault(item, (published, row.line))
        if first[0] != published:
            detail = f"{published.isoformat()} differs from {first[0].isoformat()} on line {first[1]}"
            result.left_out.append(LeftOut(row.line, item, "conflicting date", detail))
            continue
        samples[(model, item)].append(score)
    for (model, item), values in sorted(samples.items()):
        n = len(values)
        result.rows.append(
            CaseScore(model=model, case_id=item, score=sum(values) / n, published=dated[item][0], samples=n)
        )
    return result


def file_format(path: Path, head: bytes) -> str:
    """ "csv" or "jsonl": by the file's extension, else by its first character (`{` is JSONL)."""
    suffix = path.suffix.lower()
    if suffix in {".csv", ".tsv"}:
        return "csv"
    if suffix in {".jsonl", ".ndjson", ".json"}:
        return "jsonl"
    return "jsonl" if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") else "csv"


def read_scores(path: Path, columns: Mapping[str, str] | None = None) -> ExternalScores:
    """Read a CSV or JSONL file of per-item scores; a missing column is an `InputFileError`."""
    names = dict(columns or parse_columns([]))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputFileError(path, f"cannot read the scores file: {exc.strerror or exc}") from None
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        raise InputFileError(path, "a JSON array: write one JSON object per line (JSONL), or a CSV file")
    if file_format(path, data[:64]) == "csv":
        raw: Iterable[RawRow] = _csv_rows(path, data, names)
    else:
        raw = _jsonl_rows(path, names)
    result = collect(raw, str(path))
    result.sha256, result.columns = hashlib.sha256(data).hexdigest(), names
    return result


def _missing_column(path: Path, field_name: str, column: str, found: Iterable[str]) -> InputFileError:
    known = ", ".join(sorted(found)) or "none"
    hint = f"name it with --column {field_name}=COLUMN"
    return InputFileError(path, f"no column {column!r} for {field_name} (columns: {known}); {hint}")


def _csv_rows(path: Path, data: bytes, names: Mapping[str, str]) -> Iterator[RawRow]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(path, "the file is not valid UTF-8") from None
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    for field_name in FIELDS:
        if names[field_name] not in header:
            raise _missing_column(path, field_name, names[field_name], header)
    for row in reader:
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue  # a blank line
        yield _raw(reader.line_num, row, names)


def _jsonl_rows(path: Path, names: Mapping[str, str]) -> Iterator[RawRow]:
    from livemed.jsonl import json_objects

    objects = list(json_objects(path))
    seen: set[str] = set()
    for item in objects:
        if not isinstance(item, InputFileError):
            seen.update(item[1])
    for field_name in FIELDS:
        if names[field_name] not in seen:
            raise _missing_column(path, field_name, names[field_name], seen)
    for item in objects:
        if isinstance(item, InputFileError):  # not JSON, or not an object: a row left out
            yield RawRow(item.line or 0, None, None, None, None, error=item.detail)
            continue
        number, obj = item
        yield _raw(number, obj, names)


def _raw(line: int, row: Mapping[str, Any], names: Mapping[str, str]) -> RawRow:
    item_id, published, model, score = (row.get(names[f]) for f in FIELDS)
    return RawRow(line, item_id, published, model, score)


def contamination_check(
    items: Iterable[Mapping[str, Any]],
    cutoffs: date | Mapping[str, date | CutoffEntry] | str | Path,
    *,
    scores: Mapping[str, Sequence[Any] | Mapping[str, Any]] | None = None,
    evaluate: Callable[[Mapping[str, Any]], Any]
    | Mapping[str, Callable[[Mapping[str, Any]], Any]]
    | None = None,
    model: str = "model",
    settings: AnalysisSettings | None = None,
    id_key: str = "id",
    date_key: str = "publish_date",
    strict: bool = True,
) -> ContaminationResult:
    """The contamination test on your own benchmark, in the shape of the method's example.

    `items`: mappings with a `publish_date` (a date, a datetime or an ISO string) and an `id` (else
    the item's position). `cutoffs`: one date (for every model), a mapping model → date or
    `CutoffEntry`, or a cutoff file (TOML or CSV, see `cutoffs.py`). Scores come from `evaluate`
    (a function item → score, or a mapping model → function; a single function is the model named
    `model`) or `scores` (model → a score per item, in the order of `items`, or a mapping item id →
    score; a list of scores for one item is its samples, averaged). Returns the same rows and summary
    as `livemed contamination` (its JSON). An item with a missing or bad date, or a bad score, raises
    `ValueError` naming them (`items:N` is the N-th item); with `strict=False` they are left out with
    a warning instead.
    """
    listed = list(items)
    table = _score_table(listed, scores, evaluate, model, id_key, date_key)
    raw = [  # "line" N: the N-th item
        RawRow(index + 1, item_id, listed[index].get(date_key), name, value)
        for index, item_id, name, value in table
    ]
    found = collect(raw, "items")
    if found.left_out:
        message = "; ".join(found.left_out_lines())
        if strict:
            raise ValueError(message + " (pass strict=False to leave them out)")
        warnings.warn(message, stacklevel=2)
    if not found.rows:
        raise ValueError("no item has a usable date and score")
    return analyse(found.rows, _registry(cutoffs, {r.model for r in found.rows}), settings)


def _score_table(
    items: list[Mapping[str, Any]],
    scores: Mapping[str, Sequence[Any] | Mapping[str, Any]] | None,
    evaluate: Callable[[Mapping[str, Any]], Any] | Mapping[str, Callable[[Mapping[str, Any]], Any]] | None,
    model: str,
    id_key: str,
    date_key: str,
) -> list[tuple[int, str, str, Any]]:
    """(item index, item id, model, one score) for every score given or computed."""
    if (scores is None) == (evaluate is None):
        raise ValueError("give exactly one of scores= (precomputed) and evaluate= (a function)")
    ids = [str(item.get(id_key, i)) for i, item in enumerate(items)]
    out: list[tuple[int, str, str, Any]] = []
    if evaluate is not None:
        functions = evaluate if isinstance(evaluate, Mapping) else {model: evaluate}
        dated = [_usable_date(item.get(date_key)) for item in items]
        for name, fn in functions.items():  # an undated item is not evaluated (it is left out)
            out += [(i, ids[i], name, fn(item) if dated[i] else None) for i, item in enumerate(items)]
        return out
    assert scores is not None
    position = {item_id: i for i, item_id in enumerate(ids)}
    for name, given in scores.items():
        if not isinstance(given, Mapping) and len(given) != len(ids):
            raise ValueError(f"scores for {name}: {len(given)} scores for {len(ids)} items")
        pairs = given.items() if isinstance(given, Mapping) else zip(ids, given, strict=True)
        for item_id, value in pairs:
            if str(item_id) not in position:
                raise ValueError(f"scores for {name}: no item with {id_key} {item_id!r}")
            values = value if isinstance(value, list | tuple) else [value]
            out += [(position[str(item_id)], str(item_id), name, v) for v in values]
    return out


def _usable_date(value: Any) -> bool:
    try:
        parse_published(value)
    except ValueError:
        return False
    return True


def _registry(
    cutoffs: date | Mapping[str, date | CutoffEntry] | str | Path, models: set[str]
) -> dict[str, CutoffEntry]:
    if isinstance(cutoffs, str | Path):
        return load_cutoffs(cutoffs)
    given = "given to contamination_check"
    if isinstance(cutoffs, date):
        return {name: CutoffEntry(cutoff=cutoffs, source=given) for name in sorted(models)}
    return {
        name: entry if isinstance(entry, CutoffEntry) else CutoffEntry(cutoff=entry, source=given)
        for name, entry in cutoffs.items()
    }
