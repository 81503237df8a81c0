"""The bundled demo documents: `livemed/demo/data/docs.jsonl`, one Doc JSON object per line.

Lets `livemed harvest --source demo` run offline. A `path` setting reads another file of the same
format. A missing file is a SourceError; a bad line is a Rejection naming the line.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import ClassVar

from pydantic import ValidationError

from livemed.config import describe_validation_error
from livemed.errors import SourceError
from livemed.records import Doc
from livemed.sources.base import DocOrRejection, SourceSettings, rejection

NAME = "demo"


class Settings(SourceSettings):
    description: ClassVar[str] = "bundled demo documents (offline)"

    path: Path | None = None


def bundled_path() -> Path:
    return Path(str(resources.files("livemed.demo").joinpath("data", "docs.jsonl")))


class Demo:
    name = NAME
    ordered = False

    def __init__(self, settings: Settings) -> None:
        self.path = settings.path or bundled_path()

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        try:
            lines = self.path.read_bytes().splitlines()
        except OSError:
            raise SourceError(
                f"{NAME}: demo documents not found at {self.path} (reinstall livemed, or set "
                "sources.demo.path in livemed.toml)"
            ) from None
        yielded = 0
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            item = _parse(raw, f"{self.path.name}:{number}")
            if isinstance(item, Doc) and not since <= item.published <= until:
                continue
            yield item
            yielded += isinstance(item, Doc)
            if limit is not None and yielded >= limit:
                return


def _parse(raw: bytes, where: str) -> DocOrRejection:
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            return rejection(NAME, where, "bad_json", f"{where}: not an object")
        data.pop("kind", None)
        return Doc.model_validate(data)
    except UnicodeDecodeError:
        return rejection(NAME, where, "bad_encoding", f"{where}: not UTF-8")
    except json.JSONDecodeError as exc:
        return rejection(NAME, where, "bad_json", f"{where}: {exc.msg}")
    except ValidationError as exc:
        return rejection(NAME, where, "invalid_doc", f"{where}: {describe_validation_error(exc)}")
