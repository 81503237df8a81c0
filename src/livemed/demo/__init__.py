"""The bundled demo data that `livemed demo` runs on, fully offline.

Everything under `livemed/demo/data/` was written by the livemed team for the demo and is released under
CC0-1.0. It is NOT real patient data and NOT copied from any forum or journal: the people, posts and
replies are invented, and the advice is written to be plain and clinically sound, except in the one
document that deliberately recommends unproven remedies. It is demo material, not medical advice. Each
document's `metadata["expected"]` names what the pipeline should do with it (see `data/README.md`).

- `demo_docs_path()`: `docs.jsonl`, one `livemed.records.Doc` per line (source "demo"), sorted by date.
- `demo_evidence_path()`: `evidence.jsonl`, short encyclopaedia-style passages (id, title, text, url,
  licence) that support the sound advice in the demo threads, for the evidence retriever.
- `load_demo_docs()`: the documents as `Doc` records (through `livemed.jsonl`, so a bad line is named by
  file and line).
- `expected_outcomes()`: each document id → its label (`"keep"` or `"reject:<reason>"`), to check a run.
- `SIMULATED_CUTOFF`, `CONTROL_CUTOFF`: the declared cutoffs of the demo's simulated baselines
  (`offline/memorised` and the other baselines; `offline/drift-control`, after every case).
- `DEMO_CUTOFF`: the date that splits the demo documents into "before" and "after" for the data
  checks (both sides well filled); the demo's contamination view uses the simulated cutoffs above.
"""

from __future__ import annotations

from datetime import date
from importlib.resources import files
from pathlib import Path

from livemed.records import Doc

__all__ = [
    "CONTROL_CUTOFF",
    "DEMO_CUTOFF",
    "DEMO_SOURCE",
    "SIMULATED_CUTOFF",
    "bundled_copy",
    "demo_docs_path",
    "demo_evidence_path",
    "expected_outcomes",
    "load_demo_docs",
]

DEMO_CUTOFF = date(2025, 6, 30)
"""Documents published on or before this date count as "before" in the demo data's checks."""

SIMULATED_CUTOFF = date(2024, 11, 30)
"""The demo's SIMULATED training cutoff of `offline/memorised` and the plain baselines: 12 kept cases on
or before it, 54 after (the contamination guard needs 50 after and 10 before)."""

CONTROL_CUTOFF = date(2026, 12, 31)
"""The SIMULATED cutoff of `offline/drift-control`: after every demo case, so it is a drift control."""

DEMO_SOURCE = "demo"
"""The `Doc.source` of every demo document."""


def _data_file(name: str) -> Path:
    # livemed is installed as plain files (wheel or editable), so the resource is a real path on disk
    # that any code taking a `Path` (the JSONL readers, the evidence retriever) can open.
    return Path(str(files("livemed.demo").joinpath("data", name)))


def demo_docs_path() -> Path:
    """The bundled demo documents (`docs.jsonl`), found through importlib.resources."""
    return _data_file("docs.jsonl")


def bundled_copy(path: Path) -> Path:
    """`path`, or, when it is missing and points at a bundled demo file of another installation (a
    site-packages path an older `livemed demo` wrote into livemed.toml), this installation's copy."""
    parts = path.parts
    if path.exists() or parts[-4:-1] != ("livemed", "demo", "data"):
        return path
    ours = _data_file(parts[-1])
    return ours if ours.is_file() else path


def demo_evidence_path() -> Path:
    """The bundled demo evidence passages (`evidence.jsonl`), found through importlib.resources."""
    return _data_file("evidence.jsonl")


def load_demo_docs() -> list[Doc]:
    """The demo documents as validated `Doc` records, in date order; a bad line raises `InputFileError`."""
    from livemed.jsonl import read_jsonl

    result = read_jsonl(demo_docs_path(), default_kind="doc")
    if result.errors:
        raise result.errors[0]
    return [record for record in result.records if isinstance(record, Doc)]


def expected_outcomes() -> dict[str, str]:
    """Doc id (`demo:<source_id>`) → what the pipeline should do with it: `keep` or `reject:<reason>`."""
    return {doc.id: str(doc.metadata["expected"]) for doc in load_demo_docs()}
