"""The user's own threads: a JSONL or CSV export, with a configurable mapping of fields.

For data the user holds a licence to (forum dumps, clinic Q&A). Each line (JSONL) or row (CSV) is
one thread; `mapping` names the fields for id, date, post, title, replies and reply roles. Replies
are a list of strings or of objects with `text`, `role` and `author` (in CSV: a JSON list in one
cell). A bad line (bad JSON, a missing field, a value of the wrong type) is a harvest-stage
Rejection naming `file:line` and the thread's id; the rest of the file goes on.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from livemed.config import describe_validation_error
from livemed.errors import InputFileError, SourceError
from livemed.jsonl import open_text, unpaired_surrogate
from livemed.records import Doc, Reply, ReplyRole
from livemed.sources.base import DocOrRejection, SourceSettings, parse_date, rejection

NAME = "files"
ROLES = {role.value for role in ReplyRole}


class Mapping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = "id"
    date: str = "date"
    post: str = "post"
    title: str | None = "title"
    replies: str | None = "replies"
    reply_roles: str | None = Field(default=None, description="a parallel list of roles, if kept apart")
    url: str | None = None


class Settings(SourceSettings):
    description: ClassVar[str] = "your own JSONL/CSV export of threads (configurable field mapping)"

    path: Path | None = None
    format: Literal["auto", "jsonl", "csv"] = "auto"
    mapping: Mapping = Field(default_factory=Mapping)
    role_map: dict[str, str] = Field(default_factory=dict, description="your role names -> livemed roles")
    source_name: str = NAME
    doc_type: Literal["thread", "case_report", "other"] = "thread"
    licence: str | None = None
    date_field: str | None = Field(default=None, description="what the date column means (default: its name)")


class Files:
    ordered = False

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.name = settings.source_name

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        path = self.settings.path
        if path is None:
            raise SourceError(f"{self.name}: set sources.files.path in livemed.toml (a .jsonl or .csv file)")
        try:
            handle = open_text(path)  # a binary file is one error, not a rejection per line of it
        except InputFileError as exc:
            raise SourceError(f"{self.name}: {exc}") from None
        yielded = 0
        with handle:  # streamed: a large export is never read whole
            for line, row in self._rows(path, handle):
                item = row if not isinstance(row, dict) else self._doc(row, f"{path.name}:{line}")
                if isinstance(item, Doc) and not since <= item.published <= until:
                    continue
                yield item
                yielded += isinstance(item, Doc)
                if limit is not None and yielded >= limit:
                    return

    def _rows(self, path: Path, data: BinaryIO) -> Iterator[tuple[int, dict[str, Any] | DocOrRejection]]:
        kind = self.settings.format
        if kind == "auto":
            kind = "csv" if path.suffix.lower() in (".csv", ".tsv") else "jsonl"
        return self._csv_rows(path, data) if kind == "csv" else self._jsonl_rows(path, data)

    def _bad(self, where: str, reason: str, detail: str) -> DocOrRejection:
        return rejection(self.name, where, reason, f"{where}: {detail}")

    def _jsonl_rows(
        self, path: Path, data: BinaryIO
    ) -> Iterator[tuple[int, dict[str, Any] | DocOrRejection]]:
        for number, raw in enumerate(data, start=1):
            where = f"{path.name}:{number}"
            if not raw.strip():
                continue
            if len(raw) > self.settings.max_record_bytes:
                yield number, self._bad(where, "too_large", f"{len(raw):,} bytes")
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                yield number, self._bad(where, "bad_encoding", "not UTF-8")
                continue
            except json.JSONDecodeError as exc:
                yield number, self._bad(where, "bad_json", exc.msg)
                continue
            if (surrogate := unpaired_surrogate(raw, row)) is not None:
                yield number, self._bad(where, "bad_encoding", surrogate)
                continue
            yield number, row if isinstance(row, dict) else self._bad(where, "bad_json", "not an object")

    def _csv_rows(self, path: Path, data: BinaryIO) -> Iterator[tuple[int, dict[str, Any] | DocOrRejection]]:
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        csv.field_size_limit(max(csv.field_size_limit(), self.settings.max_record_bytes * 2))
        with io.TextIOWrapper(data, encoding="utf-8", errors="surrogateescape", newline="") as text:
            reader = csv.DictReader(text, delimiter=delimiter)
            first = 2
            for row in reader:
                line, first = first, reader.line_num + 1  # a quoted cell may span lines: report the first
                yield line, self._csv_row(row, f"{path.name}:{line}")

    def _csv_row(self, row: dict[str | None, Any], where: str) -> dict[str, Any] | DocOrRejection:
        values = [v for v in row.values() if isinstance(v, str)]
        if any(_has_surrogates(v) for v in values):
            return self._bad(where, "bad_encoding", "not UTF-8")
        if sum(len(v) for v in values) > self.settings.max_record_bytes:
            return self._bad(where, "too_large", "row over the size limit")
        return {k: v for k, v in row.items() if k is not None}

    def _doc(self, row: dict[str, Any], where: str) -> DocOrRejection:
        m = self.settings.mapping
        source_id = str(row.get(m.id) or "").strip()
        if not source_id:
            return self._bad(where, "missing_id", f"no {m.id!r} field")
        published = parse_date(row.get(m.date))
        if published is None:
            return self._bad(where, "missing_date", f"no usable {m.date!r} (got {row.get(m.date)!r:.40})")
        post = row.get(m.post)
        if not isinstance(post, str) or not post.strip():
            return self._bad(where, "no_text", f"no {m.post!r} text")
        replies = self._replies(row)
        if isinstance(replies, str):
            return self._bad(where, "bad_replies", f"id {source_id!r}: {replies}")
        try:
            return self._build(row, where, source_id, published, post, replies)
        except ValidationError as exc:
            return self._bad(where, "invalid_doc", f"id {source_id!r}: {describe_validation_error(exc)}")

    def _build(
        self,
        row: dict[str, Any],
        where: str,
        source_id: str,
        published: datetime,
        post: str,
        replies: list[Reply],
    ) -> Doc:
        m = self.settings.mapping
        return Doc(
            source=self.name,
            source_id=source_id,
            url=str(row[m.url]) if m.url and row.get(m.url) else None,
            published=published,
            date_field=self.settings.date_field or m.date,
            doc_type=self.settings.doc_type,
            title=str(row.get(m.title) or "") if m.title else "",
            text=post,
            replies=replies,
            licence=self.settings.licence,
            metadata={"file_line": where},
        )

    def _replies(self, row: dict[str, Any]) -> list[Reply] | str:
        m = self.settings.mapping
        raw = _json_cell(row.get(m.replies)) if m.replies else []
        roles = _json_cell(row.get(m.reply_roles)) if m.reply_roles else []
        if not isinstance(raw, list) or not isinstance(roles, list):
            return f"{m.replies!r} / {m.reply_roles!r} must be lists"
        replies = []
        for index, item in enumerate(raw):
            entry = {"text": item} if isinstance(item, str) else item
            if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
                return f"reply {index} has no text"
            role = roles[index] if index < len(roles) else entry.get("role")
            try:
                reply = Reply(
                    role=self._role(role),
                    author=entry.get("author"),
                    text=entry["text"],
                    date=parse_date(entry.get("date")),
                )
            except ValidationError as exc:
                return f"reply {index}: {describe_validation_error(exc)}"
            replies.append(reply)
        return replies

    def _role(self, value: Any) -> ReplyRole:
        name = self.settings.role_map.get(str(value), str(value)).lower() if value is not None else "other"
        return ReplyRole(name) if name in ROLES else ReplyRole.OTHER


def _json_cell(value: Any) -> Any:
    """A list as is; a CSV cell holding a JSON list decoded; empty as []."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def _has_surrogates(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)
