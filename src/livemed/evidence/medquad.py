"""Fetch MedQuAD from its public repository and convert it to the JSONL that `load_medquad` reads.

The upstream repository (https://github.com/abachaa/MedQuAD, CC BY 4.0) holds one XML file per NIH
page. `fetch_medquad` downloads the repository archive at a pinned commit to a temporary file, converts
the QA pairs of the nine answered subsets (10-12 had their answers removed upstream) into
`medquad/medquad_answered_pairs.jsonl.gz` under the cache folder, and writes the upstream LICENSE and a
provenance file beside it. The conversion changes nothing but the format and runs of whitespace.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from lxml import etree

from livemed.common.cache_dir import default_cache_dir
from livemed.errors import SourceError, UserError

MEDQUAD_COMMIT = "577bd37b96c02d1833b2c9eed2de9f96964e96cb"
MEDQUAD_URL = f"https://github.com/abachaa/MedQuAD/archive/{MEDQUAD_COMMIT}.zip"
MEDQUAD_FILE = "medquad_answered_pairs.jsonl.gz"
PROVENANCE_FILE = "provenance.json"
# 2: pairs carry `file` (evidence ids `medquad:<collection>/<file>#<qid>`) and the <DiseaseFile> and
# <doc> layouts are read; a cached conversion without this format is converted again by the fetch.
CONVERSION_FORMAT = 2
LICENSE_FILE = "LICENSE.txt"
ATTRIBUTION = (
    'MedQuAD, CC BY 4.0: Asma Ben Abacha and Dina Demner-Fushman, "A Question-Entailment Approach to '
    'Question Answering", BMC Bioinformatics 20:511 (2019). Changes: format conversion only.'
)
# The subsets whose answers upstream kept (10_MPlus_ADAM_QA, 11_MPlusDrugs_QA and
# 12_MPlusHerbsSupplements_QA had theirs removed for MedlinePlus copyright).
ANSWERED_SUBSETS = (
    "1_CancerGov_QA",
    "2_GARD_QA",
    "3_GHR_QA",
    "4_MPlus_Health_Topics_QA",
    "5_NIDDK_QA",
    "6_NINDS_QA",
    "7_SeniorHealth_QA",
    "8_NHLBI_QA_XML",
    "9_CDC_QA",
)
_SPACE = re.compile(r"\s+")
# No entities, DTDs or network: the files are data, not documents to be resolved.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def medquad_path(cache_dir: Path | None = None) -> Path:
    """Where `livemed evidence fetch medquad` writes the converted file."""
    return (cache_dir or default_cache_dir()) / "medquad" / MEDQUAD_FILE


@dataclass
class Conversion:
    """What one conversion wrote and skipped."""

    pairs: int = 0
    files: int = 0
    empty_answers: int = 0
    per_collection: dict[str, int] = field(default_factory=dict)
    bad_files: list[str] = field(default_factory=list)  # "path: reason"


@dataclass
class FetchResult:
    path: Path
    fetched: bool  # False: the file was already there and nothing was done
    conversion: Conversion | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class _Layout:
    """Where one of the upstream XML layouts keeps each field."""

    doc_id: str
    source: str
    focus: str
    cuis: str
    types: str
    group: str
    pairs: str
    question: str
    answer: str


# 5,492 files are <Document>; 9_CDC_QA/0000397.xml is a <DiseaseFile> and four 6_NINDS_QA files are
# <doc>/<qaPairs>/<pair> (lower-case fields); all three carry the same information.
LAYOUTS = {
    "Document": _Layout(
        "id", "source", "Focus", "FocusAnnotations/UMLS/CUIs/CUI",
        "FocusAnnotations/UMLS/SemanticTypes/SemanticType", "FocusAnnotations/UMLS/SemanticGroup",
        "QAPairs/QAPair", "Question", "Answer",
    ),
    "DiseaseFile": _Layout(
        "fid", "source", "Focus", "UMLS/CUI", "UMLS/SemanticType", "UMLS/SemanticGroup",
        "QAPairs/QAPair", "Question", "Answer",
    ),
    "doc": _Layout(
        "docid", "corpus", "doctitle-focus", "umls/cui", "umls/semanticType", "umls/semanticGroup",
        "qaPairs/pair", "question", "answer",
    ),
}  # fmt: skip


def _text(element: Any) -> str:
    return _SPACE.sub(" ", "".join(element.itertext())).strip() if element is not None else ""


def _texts(root: Any, path: str) -> list[str]:
    return [text for text in (_text(e) for e in root.findall(path)) if text]


def parse_document(data: bytes, collection: str, file: str = "") -> tuple[list[dict[str, Any]], int]:
    """The answered pairs of one MedQuAD XML file, and how many empty answers were dropped.

    `file` is the file's name without `.xml`; it goes into each pair (the evidence id is built from
    collection, file and question id, see `corpus.medquad_ids`). Raises `etree.XMLSyntaxError` on a
    malformed file, ValueError when the root is none of the known layouts.
    """
    root = etree.fromstring(data, parser=_PARSER)
    layout = LAYOUTS.get(root.tag)
    if layout is None:
        known = ", ".join(f"<{name}>" for name in LAYOUTS)
        raise ValueError(f"root element is <{root.tag}>, not one of {known}")
    common = {
        "collection": collection,
        "file": file,
        "source": root.get(layout.source),
        "doc_id": root.get(layout.doc_id),
        "url": root.get("url"),
        "focus": _text(root.find(layout.focus)),
        "umls_cuis": _texts(root, layout.cuis),
        "semantic_types": _texts(root, layout.types),
        "semantic_group": _text(root.find(layout.group)),
    }
    pairs, empty = [], 0
    for pair in root.findall(layout.pairs):
        question = pair.find(layout.question)
        answer = _text(pair.find(layout.answer))
        if not answer:
            empty += 1
            continue
        pairs.append(
            {
                "qid": question.get("qid") if question is not None else None,
                **common,
                "qtype": question.get("qtype") if question is not None else None,
                "question": _text(question),
                "answer": answer,
            }
        )
    return pairs, empty


def _collection_of(name: str) -> str | None:
    parts = PurePosixPath(name).parts
    if len(parts) >= 2 and parts[-2] in ANSWERED_SUBSETS and parts[-1].lower().endswith(".xml"):
        return parts[-2]
    return None


def _members(archive: zipfile.ZipFile) -> Iterator[tuple[str, str]]:
    """(collection, member name) of the answered subsets' XML files, in subset then file order."""
    order = {name: i for i, name in enumerate(ANSWERED_SUBSETS)}
    found = [(c, info.filename) for info in archive.infolist() if (c := _collection_of(info.filename))]
    yield from sorted(found, key=lambda item: (order[item[0]], item[1]))


def convert_archive(archive_path: Path, out_dir: Path) -> Conversion:
    """Convert a MedQuAD repository zip into `out_dir/medquad_answered_pairs.jsonl.gz` (+ LICENSE.txt).

    Each file is written to a temporary name first and renamed when complete. A malformed XML file
    is recorded in `bad_files` and skipped.
    """
    try:
        archive = zipfile.ZipFile(archive_path)
    except zipfile.BadZipFile:
        raise SourceError(f"medquad: the downloaded archive {archive_path.name} is not a zip file") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    result = Conversion()
    with archive:
        members = list(_members(archive))
        if not members:
            raise SourceError(
                "medquad: the archive holds none of the answered subsets "
                f"({ANSWERED_SUBSETS[0]} … {ANSWERED_SUBSETS[-1]}); is it the MedQuAD repository?"
            )
        target = out_dir / MEDQUAD_FILE
        with _atomic(target) as tmp, gzip.open(tmp, "wt", encoding="utf-8") as handle:
            for collection, name in members:
                try:
                    stem = PurePosixPath(name).stem
                    pairs, empty = parse_document(archive.read(name), collection, stem)
                except (etree.XMLSyntaxError, ValueError) as exc:
                    result.bad_files.append(f"{name}: {exc}")
                    continue
                result.files += 1
                result.empty_answers += empty
                for pair in pairs:
                    handle.write(json.dumps(pair, ensure_ascii=False) + "\n")
                result.pairs += len(pairs)
                result.per_collection[collection] = result.per_collection.get(collection, 0) + len(pairs)
        licence = [
            n for n in archive.namelist() if PurePosixPath(n).name.upper() in ("LICENSE.TXT", "LICENSE")
        ]
        if licence:
            with _atomic(out_dir / LICENSE_FILE) as tmp:
                tmp.write_bytes(archive.read(min(licence, key=len)))
    return result


class _atomic:
    """`with _atomic(path) as tmp:` write `tmp`; it replaces `path` only when the block succeeds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        os.close(fd)
        self.tmp = Path(name)

    def __enter__(self) -> Path:
        return self.tmp

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            umask = os.umask(0)  # mkstemp makes the file private; give it the permissions of any new file
            os.umask(umask)
            os.chmod(self.tmp, 0o666 & ~umask)
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


async def _download(url: str, dest: Path, *, max_retries: int, timeout_s: float) -> None:
    from livemed.sources.http import HttpClient

    async with HttpClient(
        "medquad", requests_per_second=1.0, max_retries=max_retries, timeout_s=timeout_s
    ) as http:
        await http.download(url, dest)


def is_current(cache_dir: Path | None = None) -> bool:
    """True when the cached conversion exists and was written in this `CONVERSION_FORMAT`."""
    path = medquad_path(cache_dir)
    try:
        provenance = json.loads((path.parent / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return path.exists() and isinstance(provenance, dict) and provenance.get("format") == CONVERSION_FORMAT


def fetch_medquad(
    *,
    url: str = MEDQUAD_URL,
    cache_dir: Path | None = None,
    force: bool = False,
    max_retries: int = 3,
    timeout_s: float = 60.0,
) -> FetchResult:
    """Download and convert MedQuAD into the cache folder, unless a current conversion is already there
    (one written in an older format, see `CONVERSION_FORMAT`, is converted again)."""
    path = medquad_path(cache_dir)
    if not force and is_current(cache_dir):
        return FetchResult(path, fetched=False)
    out_dir = path.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the cache folder {out_dir}: {exc.strerror}") from None
    with tempfile.TemporaryDirectory(prefix=".download-", dir=out_dir) as scratch:
        archive = Path(scratch) / "medquad.zip"
        asyncio.run(_download(url, archive, max_retries=max_retries, timeout_s=timeout_s))
        sha256 = _sha256(archive)
        conversion = convert_archive(archive, out_dir)
    if conversion.pairs == 0:
        path.unlink(missing_ok=True)
        raise SourceError(f"medquad: no answered QA pairs in the archive from {url}")
    provenance = {
        "url": url,
        "commit": MEDQUAD_COMMIT if MEDQUAD_COMMIT in url else None,
        "archive_sha256": sha256,
        "format": CONVERSION_FORMAT,
        "file": MEDQUAD_FILE,
        "file_sha256": _sha256(path),
        "pairs": conversion.pairs,
        "xml_files": conversion.files,
        "empty_answers_dropped": conversion.empty_answers,
        "per_collection": conversion.per_collection,
        "bad_files": conversion.bad_files,
        "licence": "CC BY 4.0",
        "attribution": ATTRIBUTION,
        "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    with _atomic(out_dir / PROVENANCE_FILE) as tmp:
        tmp.write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return FetchResult(path, fetched=True, conversion=conversion, sha256=sha256)
