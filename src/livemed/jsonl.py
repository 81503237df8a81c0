"""JSONL export and import of records.

Each line is one record: its JSON fields plus `"kind"`. Import reads line by line, so a
malformed line is reported with its file and line number and the other lines still load. A file
that is not text (`open_text`) is one error, not a bad line per line of it.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, TypeVar

import orjson
from pydantic import ValidationError

from livemed.common.atomic import staged_folder, writing_text
from livemed.config import describe_validation_error
from livemed.errors import InputFileError
from livemed.records import RECORD_TYPES, Record

if TYPE_CHECKING:
    from livemed.store import Store  # not imported to read a file: SQLAlchemy is a third of a second

T = TypeVar("T")


@dataclass
class LoadResult:
    """What an import produced: records, and the lines it could not read."""

    records: list[Record] = field(default_factory=list)
    errors: list[InputFileError] = field(default_factory=list)


def dump_line(record: Record) -> str:
    payload = record.model_dump(mode="json")
    return json.dumps({"kind": record.kind, **payload}, ensure_ascii=False)


def write_jsonl(records: Iterable[Record], path: Path) -> int:
    """Write records to `path`, one per line (whole or none: `atomic.writing_text`); returns the count."""
    with writing_text(path) as handle:
        return _write_lines(records, handle)


def _write_lines(records: Iterable[Record], handle: TextIO) -> int:
    count = 0
    for record in records:
        handle.write(dump_line(record) + "\n")
        count += 1
    return count


def export_store(store: Store, out: Path, kinds: Iterable[str] | None = None) -> dict[str, int]:
    """Export: a `.jsonl` path gets one kind or all, mixed; anything else is a folder, one file per kind
    (every file, or none if a write fails: `atomic.staged_folder`)."""
    selected = list(kinds) if kinds else [k for k in RECORD_TYPES if k in store.count()]
    if out.suffix == ".jsonl":  # out.jsonl; `results.v2` or `out/` is a folder
        return {"all" if len(selected) != 1 else selected[0]: write_jsonl(_stream(store, selected), out)}
    counts = {}
    with staged_folder(out) as work:
        for kind in selected:
            with (work / f"{kind}.jsonl").open("w", encoding="utf-8") as handle:
                counts[kind] = _write_lines(_stream(store, [kind]), handle)
    return counts


def _stream(store: Store, kinds: list[str]) -> Iterator[Record]:
    for kind in kinds:
        if kind == "run":  # as they stand now: a killed Run as interrupted
            from livemed.pipeline.runs import as_seen

            yield from map(as_seen, store.iter(RECORD_TYPES[kind]))  # type: ignore[arg-type]
        else:
            yield from store.iter(RECORD_TYPES[kind])


def _lines(handle: BinaryIO, max_bytes: int | None) -> Iterator[bytes | int]:
    """Each line of `handle`, or, for a line longer than `max_bytes`, its size (never held in memory)."""
    if max_bytes is None:
        yield from handle
        return
    while raw := handle.readline(max_bytes + 1):
        if len(raw) <= max_bytes or raw.endswith(b"\n"):  # the whole line, its newline included
            yield raw
            continue
        size = len(raw)
        while raw and not raw.endswith(b"\n"):  # skip the rest of the long line in bounded pieces
            raw = handle.readline(1 << 20)
            size += len(raw)
        yield size - (1 if raw.endswith(b"\n") else 0)


# orjson refuses NaN, ±Infinity and numbers that overflow a double (Python's json reads them), and reads
# an integer past 64 bits as a float (Python's json: an int). A line with no run of 19 digits that
# orjson accepts therefore decodes to the same object as with Python's json; any other line goes there.
_DIGITS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))  # every digit "0", the rest " "
_LONG_DIGITS = b"0" * 19


def decode_exact(raw: bytes) -> Any:
    """The object of a line that orjson reads exactly as Python's json would (several times faster,
    and it holds only finite numbers), else None: such a line goes through `_decode`."""
    if _LONG_DIGITS in raw.translate(_DIGITS):  # two passes in C; a regex is 10× slower
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # the error message comes from Python's json, as before
        return None


# A \\u escape of a high surrogate with no low one after it, or of a low one with no high one before.
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _decode(path: Path, raw: bytes, number: int) -> tuple[int, dict[str, Any]] | InputFileError:
    try:
        data: Any = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return InputFileError(path, "line is not valid UTF-8", number)
    except json.JSONDecodeError as exc:
        return InputFileError(
            path, f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}", number
        )
    except RecursionError:
        return InputFileError(path, "invalid JSON: nested too deeply", number)
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        return InputFileError(path, f"invalid JSON: {str(exc).split(':')[0]}", number)
    if (surrogate := unpaired_surrogate(raw, data)) is not None:
        return InputFileError(path, f"invalid JSON: {surrogate}", number)
    if isinstance(data, dict):
        return number, data
    return InputFileError(path, f"expected a JSON object, got {type(data).__name__}", number)


def unpaired_surrogate(raw: bytes, data: Any) -> str | None:
    """What is wrong with a JSON line that Python's json decoded (to `data`) when it escapes an unpaired
    surrogate (`"\\ud800"`): no character, so no store can keep it, no model can read it, and orjson
    refuses the line. None for any other line."""
    found = _LONE_SURROGATE.search(raw)
    if found is None:
        return None
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        column = len(raw[: found.start()].decode("utf-8")) + 1
        return f"unpaired surrogate {found.group().decode()} (no character) at column {column}"
    return None  # the escape was text (an escaped backslash before it)


def json_objects(
    path: Path, *, max_bytes: int | None = None, limit_name: str = "max_record_bytes"
) -> Iterator[tuple[int, dict[str, Any]] | InputFileError]:
    """Each non-blank line of a JSONL file as (line number, object), or an error naming file:line.

    A line over `max_bytes` (when given) is an error naming the limit (`limit_name`), not read whole."""
    for item in _objects(path, max_bytes=max_bytes, limit_name=limit_name):
        yield item if isinstance(item, InputFileError) else item[:2]


def _objects(
    path: Path, *, max_bytes: int | None, limit_name: str
) -> Iterator[tuple[int, dict[str, Any], bool] | InputFileError]:
    """`json_objects`, each object with whether orjson decoded it (then it holds no NaN or ±Infinity)."""
    for number, raw in read_lines(path, max_bytes):
        if (item := line_object(path, number, raw, max_bytes, limit_name)) is not None:
            yield item


def read_lines(path: Path, max_bytes: int | None) -> Generator[tuple[int, bytes | int], None, None]:
    """(line number, raw line) of a JSONL file, a line over `max_bytes` as its size (see `line_object`)."""
    with open_text(path) as handle:
        yield from enumerate(_lines(handle, max_bytes), start=1)


TEXT_PROBE_BYTES = 8192
NOT_UTF8_SHARE = 10


def open_text(path: Path) -> BinaryIO:
    """`path` opened to be read line by line (as bytes); an InputFileError when it cannot be opened or
    is not a text file (`not_text` of its first `TEXT_PROBE_BYTES`): one line for a binary file, not a
    bad line for each of its lines."""
    try:
        raw = path.open("rb", buffering=0)
    except OSError as exc:
        raise InputFileError(path, f"cannot open: {exc.strerror}") from None
    handle = io.BufferedReader(raw, buffer_size=1 << 16)  # one read fills the probe: peek() does one
    problem = not_text(handle.peek(TEXT_PROBE_BYTES)[:TEXT_PROBE_BYTES])
    if problem is not None:
        handle.close()
        raise InputFileError(path, f"not a text file ({problem})")
    return handle


def check_text(path: Path) -> None:
    """`open_text`'s checks alone, for a command that says something about the file before reading it."""
    open_text(path).close()


def not_text(block: bytes) -> str | None:
    """Why the first block of a file shows it is not text, or None: a NUL byte, or more than one byte
    in `NOT_UTF8_SHARE` that is not UTF-8 (a text file with a few mis-encoded lines is read, and those
    lines are reported one by one; a character cut at the block's end is no fault)."""
    if b"\x00" in block:
        return "NUL bytes in its first 8 KiB"
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(block, final=False)
    faults = text.count("\ufffd") - block.count("\ufffd".encode())  # U+FFFD written in the file is text
    if faults * NOT_UTF8_SHARE > len(block):
        return f"over 1 in {NOT_UTF8_SHARE} bytes of its first 8 KiB not UTF-8"
    return None


def line_object(
    path: Path, number: int, raw: bytes | int, max_bytes: int | None, limit_name: str
) -> tuple[int, dict[str, Any], bool] | InputFileError | None:
    """One line of `read_lines` as (number, object, decoded by orjson), an error naming file:line, or
    None for a blank line."""
    if isinstance(raw, int):
        message = f"record of {raw:,} bytes is over the limit of {max_bytes:,} bytes ({limit_name})"
        return InputFileError(path, message, number)
    if isinstance(data := decode_exact(raw), dict):
        return number, data, True
    if not raw.strip():
        return None
    item = _decode(path, raw, number)
    return item if isinstance(item, InputFileError) else (*item, False)


def parse_objects(
    path: Path,
    parse: Callable[[dict[str, Any]], T],
    *,
    max_bytes: int | None = None,
    limit_name: str = "",
    lenient: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[T | InputFileError]:
    """`parse` each object of a JSONL file; an object it refuses (ValueError) becomes a file:line error.

    `max_bytes` and `limit_name`: see `json_objects`. `lenient` checks (raising ValueError) only the
    objects Python's json decoded, the only ones that can hold NaN or ±Infinity (e.g.
    `interop.fields.finite_everywhere`)."""
    for item in _objects(path, max_bytes=max_bytes, limit_name=limit_name or "max_record_bytes"):
        yield parse_object(path, item, parse, lenient)


def parse_object(
    path: Path,
    item: tuple[int, dict[str, Any], bool] | InputFileError,
    parse: Callable[[dict[str, Any]], T],
    lenient: Callable[[dict[str, Any]], None] | None = None,
) -> T | InputFileError:
    """One item of `line_object` through `parse` (see `parse_objects`)."""
    if isinstance(item, InputFileError):
        return item
    number, data, exact = item
    try:
        if lenient is not None and not exact:
            lenient(data)
        return parse(data)
    except ValueError as exc:
        return InputFileError(path, str(exc), number)


def record_from(data: dict[str, Any], *, default_kind: str | None = None) -> Record:
    """A JSON object to a record of its `kind`; raises ValueError with a readable message."""
    data = dict(data)
    kind = data.pop("kind", default_kind)
    if kind is None:
        raise ValueError(f"no 'kind' field (one of: {', '.join(RECORD_TYPES)}; or pass --kind)")
    if kind not in RECORD_TYPES:
        raise ValueError(f"unknown record kind {kind!r} (known: {', '.join(RECORD_TYPES)})")
    try:
        return RECORD_TYPES[kind].model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"invalid {kind}: {describe_validation_error(exc)}") from None


def iter_jsonl(path: Path, *, default_kind: str | None = None) -> Iterator[Record | InputFileError]:
    """Stream a JSONL file: each line becomes a record, or an error naming the file and line."""
    return parse_objects(path, lambda data: record_from(data, default_kind=default_kind))


def read_jsonl(path: Path, *, default_kind: str | None = None) -> LoadResult:
    """Read a whole JSONL file into memory (for small files; see `import_jsonl` for large ones)."""
    result = LoadResult()
    for item in iter_jsonl(path, default_kind=default_kind):
        if isinstance(item, InputFileError):
            result.errors.append(item)
        else:
            result.records.append(item)
    return result


def import_jsonl(
    store: Store, path: Path, *, default_kind: str | None = None
) -> tuple[int, list[InputFileError]]:
    """Stream a JSONL file into the store; returns (records written, bad lines)."""
    errors: list[InputFileError] = []

    def good() -> Iterator[Record]:
        for item in iter_jsonl(path, default_kind=default_kind):
            if isinstance(item, InputFileError):
                errors.append(item)
            else:
                yield item

    written = store.put(good())
    return written, errors
