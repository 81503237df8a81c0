"""Build the retriever a command asked for (reads the corpus file; stages only receive the retriever)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING

from livemed.errors import ConfigError, UserError
from livemed.evidence import NoEvidence, Retriever
from livemed.evidence.corpus import Passage, load_corpus, load_medquad

if TYPE_CHECKING:
    from livemed.sources.europepmc import Settings as EuropePMCSettings


def detect_format(path: Path) -> str:
    """'medquad' when the first line has MedQuAD's fields, else 'jsonl'."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            first = handle.readline()
        data = json.loads(first)
    except (OSError, ValueError):
        return "jsonl"
    return "medquad" if isinstance(data, dict) and {"qid", "answer"} <= data.keys() else "jsonl"


def resolve_evidence(name_or_path: str | Path) -> Path:
    """The file behind `--evidence` / `evidence`: a path, the word `medquad` for the copy that
    `livemed evidence fetch medquad` keeps in the cache folder (never downloaded here), or `demo` for the
    bundled demo passages (`config.NAMED_CORPORA`). A path into another installation's bundled demo data
    (an older demo's livemed.toml) is this installation's copy."""
    from livemed.demo import bundled_copy, demo_evidence_path

    if str(name_or_path) == "demo":
        return demo_evidence_path()
    if str(name_or_path) == "medquad":
        from livemed.evidence.medquad import medquad_path

        path = medquad_path()
        if not path.is_file():
            raise UserError(
                f"evidence 'medquad' is not in the cache ({path} is missing); "
                "run `livemed evidence fetch medquad` first"
            )
        return path
    return bundled_copy(Path(name_or_path))


def load_passages(path: str | Path, fmt: str = "auto") -> list[Passage]:
    """Passages of a corpus file, or of a named corpus (`resolve_evidence`)."""
    path = resolve_evidence(path)
    if fmt == "auto":
        fmt = detect_format(path)
    return load_medquad(path) if fmt == "medquad" else load_corpus(path)


def default_index_dir(configured: str | Path | None = None) -> Path:
    """Where BM25 indexes are kept: `configured` (`[curate] index_dir`), else `<cache>/evidence`, the
    cache being `$LIVEMED_CACHE_DIR`, `$XDG_CACHE_HOME/livemed` or `~/.cache/livemed`."""
    from livemed.common.cache_dir import default_cache_dir

    return Path(configured) if configured else default_cache_dir() / "evidence"


def build_retriever(
    kind: str,
    *,
    evidence: str | None,
    evidence_format: str = "auto",
    index_dir: Path | None = None,
    dense_model: str | None = None,
    europepmc: EuropePMCSettings | None = None,
) -> Retriever:
    """The retriever named `kind` ('bm25', 'europepmc', 'dense' or 'none').

    `europepmc` is the Europe PMC source's settings (`[sources.europepmc]`: base URL, rate, retries,
    timeout), which the live evidence search shares.
    """
    if kind == "none":
        return NoEvidence()
    if kind == "europepmc":
        from livemed.evidence.europepmc import EuropePMCRetriever

        return EuropePMCRetriever(settings=europepmc)
    if not evidence:
        raise ConfigError(
            f"the {kind} retriever needs an evidence corpus: pass --evidence PATH (JSONL with id, title, "
            "text, url, licence, or MedQuAD's medquad_answered_pairs.jsonl.gz), --evidence medquad (after "
            "`livemed evidence fetch medquad`) or set curate.evidence "
            "in livemed.toml"
        )
    passages = load_passages(evidence, evidence_format)
    if not passages:
        raise ConfigError(f"evidence corpus {evidence} has no passages")
    if kind == "dense":
        from livemed.evidence.dense import DenseRetriever, sentence_transformer

        if not dense_model:
            raise ConfigError(
                "the dense retriever needs curate.dense_model in livemed.toml (a sentence-transformers model)"
            )
        return DenseRetriever(passages, sentence_transformer(dense_model))
    from livemed.evidence.bm25 import BM25Retriever

    return BM25Retriever(passages, cache_dir=index_dir)
