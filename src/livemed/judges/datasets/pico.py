"""PICO span sets: a generic JSONL (`text`, `P`, `I`, `C`, `O` lists of verbatim spans; optional `id`)
and an EBM-NLP reader (token labels → span sets; the comparator C from the intervention label
"Control", hierarchical label 7). The package ships a small project-made set over PubMedQA contexts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.jsonl import parse_objects
from livemed.judges.datasets.items import PICO_KEYS, PicoItem

CONTROL = 7  # EBM-NLP hierarchical intervention label "Control": the comparator
ELEMENTS = {"participants": "P", "interventions": "I", "outcomes": "O"}


def project_set() -> Path:
    """The project-made PICO set (spans over PubMedQA contexts, MIT), shipped as package data."""
    return Path(str(resources.files("livemed.judges").joinpath("data/pico_pubmedqa.jsonl")))


def _jsonl_item(data: dict[str, Any], number: int) -> PicoItem:
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("missing field 'text'")
    spans: dict[str, list[str]] = {}
    for key in PICO_KEYS:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"field {key!r} must be a list of strings")
        for span in value:
            if span not in text:
                raise ValueError(f"{key} span {span!r} is not verbatim in the text")
        spans[key] = value
    return PicoItem(item_id=str(data.get("id") or number), text=text, spans=spans)


def load_jsonl(path: Path) -> Iterator[PicoItem | InputFileError]:
    number = 0

    def parse(data: dict[str, Any]) -> PicoItem:
        nonlocal number
        number += 1
        return _jsonl_item(data, number)

    yield from parse_objects(path, parse)


def load(path: Path | None) -> Iterator[PicoItem | InputFileError]:
    """The JSONL file at `path`, an EBM-NLP folder, or (no path) the project-made set."""
    if path is None:
        yield from load_jsonl(project_set())
    elif path.is_dir():
        yield from load_ebm_nlp(path)
    else:
        yield from load_jsonl(path)


def _labels(file: Path) -> list[int]:
    raw = [part for part in re.split(r"[\s,]+", file.read_text(encoding="utf-8")) if part]
    try:
        return [int(part) for part in raw]
    except ValueError:
        raise ValueError("labels must be integers") from None


def runs(tokens: list[str], labels: list[int], keep: set[int] | None = None) -> list[str]:
    """Spans of consecutive tokens whose label is non-zero (and in `keep` when given), joined by spaces."""
    spans, current = [], []
    for token, label in zip(tokens, labels, strict=True):
        if label and (keep is None or label in keep):
            current.append(token)
        elif current:
            spans.append(" ".join(current))
            current = []
    if current:
        spans.append(" ".join(current))
    return list(dict.fromkeys(spans))


def _ann_files(root: Path, element: str) -> dict[str, Path]:
    """PMID → label file of one element (expert test/gold files win over crowd ones)."""
    base = root / "annotations" / "aggregated" / "hierarchical_labels" / element
    found: dict[str, Path] = {}
    for file in sorted(base.rglob("*.ann"), key=lambda f: "gold" in f.parts):
        found[file.name.split(".")[0]] = file
    return found


def _ebm_item(root: Path, pmid: str, files: dict[str, dict[str, Path]]) -> PicoItem:
    tokens_file = root / "documents" / f"{pmid}.tokens"
    if not tokens_file.exists():
        raise ValueError(f"no {tokens_file.name} in documents/")
    tokens = tokens_file.read_text(encoding="utf-8").split()
    spans: dict[str, list[str]] = {key: [] for key in PICO_KEYS}
    for element, key in ELEMENTS.items():
        file = files[element].get(pmid)
        if file is None:
            continue
        labels = _labels(file)
        if len(labels) != len(tokens):
            raise ValueError(f"{file.name} has {len(labels)} labels for {len(tokens)} tokens")
        if key == "I":
            spans["I"] = runs(tokens, labels, keep=set(range(1, CONTROL)))
            spans["C"] = runs(tokens, labels, keep={CONTROL})
        else:
            spans[key] = runs(tokens, labels)
    return PicoItem(item_id=pmid, text=" ".join(tokens), spans=spans)


def load_ebm_nlp(root: Path) -> Iterator[PicoItem | InputFileError]:
    """Abstracts of an EBM-NLP folder (`documents/`, `annotations/aggregated/hierarchical_labels/`)."""
    files = {element: _ann_files(root, element) for element in ELEMENTS}
    pmids = sorted({pmid for found in files.values() for pmid in found})
    if not pmids:
        raise InputFileError(root, "no EBM-NLP label files under annotations/aggregated/hierarchical_labels/")
    for pmid in pmids:
        try:
            yield _ebm_item(root, pmid, files)
        except (ValueError, OSError) as exc:
            where = next((f[pmid] for f in files.values() if pmid in f), root)
            yield InputFileError(where, str(exc))
