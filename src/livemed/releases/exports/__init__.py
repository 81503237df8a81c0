"""Release exports: `jsonl`, `parquet` (pyarrow), `healthbench`, `hf` (a `datasets` folder with a
dataset card) and `inspect` (an Inspect AI task). Each writes into a folder, with `manifest.json`:
a hidden sibling folder renamed into place when every file is written (`atomic.staged_folder`), so an
export is complete or absent.

```python
result = export_release(store, release, "hf", Path("out"), embargo_days=14)
```
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from livemed.common.atomic import staged_folder
from livemed.errors import ConfigError
from livemed.records import Release
from livemed.releases.exports.rows import MANIFEST_FILE, ExportResult, Selection, select, write_manifest
from livemed.store import Store

FORMATS = ("jsonl", "parquet", "healthbench", "hf", "inspect")


def _writer(fmt: str) -> Callable[[Selection, Path], ExportResult]:
    if fmt == "jsonl":
        from livemed.releases.exports.tables import write_jsonl_export

        return write_jsonl_export
    if fmt == "parquet":
        from livemed.releases.exports.tables import write_parquet_export

        return write_parquet_export
    if fmt == "healthbench":
        from livemed.releases.exports.tables import write_healthbench_export

        return write_healthbench_export
    if fmt == "hf":
        from livemed.releases.exports.hf import write_hf_export

        return write_hf_export
    if fmt == "inspect":
        from livemed.releases.exports.inspect_task import write_inspect_export

        return write_inspect_export
    raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")


def export_release(
    store: Store, release: Release, fmt: str, out: Path, *, embargo_days: int = 0, include_text: bool = False
) -> ExportResult:
    """Write `release` in format `fmt` into folder `out` (made if missing), with its manifest: all of
    it, or nothing (`out` as it was) if a write fails."""
    writer = _writer(fmt)
    selection = select(store, release, embargo_days=embargo_days, include_text=include_text)
    with staged_folder(out, last=MANIFEST_FILE) as work:
        result = writer(selection, work)
        result.files.append(write_manifest(work, result, fmt))
    result.files = [out / path.relative_to(work) for path in result.files]
    return result


__all__ = ["FORMATS", "ExportResult", "export_release"]
