"""Typed run configuration: the project file `livemed.toml`, with CLI overrides on top.

Precedence for every setting: command-line option > environment variable (where one exists) >
`livemed.toml` > built-in default. API keys are never configured here: a model names the
*environment variable* that holds its key.
"""

from __future__ import annotations

import os
import tomllib
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from livemed.errors import ConfigError
from livemed.records.cases import ViewKind

CONFIG_FILE = "livemed.toml"
DEFAULT_STORE = "livemed.db"
NAMED_CORPORA = ("medquad", "demo")  # evidence corpora by name (curate.evidence.factory.resolve_evidence)


HF_CONCURRENCY = 16  # an hf/ model's default max_concurrency: the calls batched into one generate


class ModelConfig(BaseModel):
    """Per-model endpoint and limits; keys of `[models]` are model ids such as `openai/gpt-4o-mini`."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | list[str] | None = Field(
        default=None, description="the endpoint, or a list of replicas serving this model (balanced)"
    )
    api_key_env: str | None = Field(default=None, description="name of the environment variable with the key")
    max_concurrency: int = Field(
        default=512,
        ge=1,
        description="calls in flight at most (fewer while the endpoint answers 429: models.window); "
        f"default 512, and {HF_CONCURRENCY} for hf/ models, whose batch it is",
    )
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    max_consecutive_failures: int = Field(
        default=20,
        ge=1,
        description="after this many failed requests in a row (5xx, timeouts, connection errors; 429 aside) "
        "the model's later calls are not sent",
    )
    json_schema: bool | None = Field(default=None, description="does the endpoint accept JSON-schema output?")
    extra_body: dict[str, Any] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _some_replica(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and not value:
            raise ValueError("a list of base URLs needs at least one")
        return value


class Price(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class Thresholds(BaseModel):
    """Curation thresholds: a case is kept only when the score is strictly above the threshold, and
    (`answer_leak`) when no advice element's leak into the candidate's prompt is above it."""

    model_config = ConfigDict(extra="forbid")

    s_inf: float = Field(default=0.5, ge=0, le=1)
    s_align: float = Field(default=0.5, ge=0, le=1)
    answer_leak: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="reject a case when an advice element's leak into the candidate's prompt is above this",
    )


class CurateConfig(BaseModel):
    """Curation settings (`[curate]`): the evidence corpus and retriever, checklists, the audit."""

    model_config = ConfigDict(extra="forbid")

    evidence: str | None = Field(
        default=None,
        description='evidence corpus: JSONL (id,title,text,url,licence), MedQuAD, or "medquad" (fetched)',
    )
    evidence_format: Literal["auto", "jsonl", "medquad"] = "auto"
    retriever: Literal["bm25", "europepmc", "dense", "none"] = "bm25"
    evidence_k: int = Field(default=3, ge=1, le=20)
    dense_model: str | None = Field(default=None, description="sentence-transformers model for 'dense'")
    index_dir: str | None = Field(default=None, description="where BM25 indexes are kept")
    checklists: dict[str, list[str]] = Field(
        default_factory=dict,
        description="narrative checklist per doc type ('thread', 'case_report', 'default')",
    )
    llm_audit: bool = Field(
        default=True, description="let the model audit paraphrases the fuzzy match missed"
    )
    grounding_min_score: float = Field(default=90.0, ge=0, le=100)
    candidate_view: ViewKind = Field(
        default="narrative",
        description="what the candidate reads of a thread: 'narrative' (its slots and the query) or 'post' "
        "(the asker's own title and post, verbatim); recorded on each case",
    )
    candidate_view_by_source: dict[str, ViewKind] = Field(
        default_factory=dict, description="source -> candidate view, overriding candidate_view for it"
    )


class AnalysisConfig(BaseModel):
    """Settings of `livemed leaderboard`, `contamination`, `taxonomy` and `report`."""

    model_config = ConfigDict(extra="forbid")

    cutoffs: str | None = Field(
        default=None, description="your model-cutoff registry (TOML), on top of the bundled one"
    )
    out_dir: str = Field(default="results", description="where tables are written as CSV and JSON")
    report: str = Field(default="results/report.html", description="where `livemed report` writes")
    seed: int = Field(default=0, ge=0)
    resamples: int = Field(default=2000, ge=1000)
    permutations: int = Field(default=5000, ge=1000)
    min_post_cases: int = Field(default=50, ge=1)
    min_pre_cases: int = Field(default=10, ge=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)

    def path(self, value: str, config_path: Path | None) -> Path:
        """A path from this section, relative to the project file when there is one."""
        p = Path(value).expanduser()
        return p if p.is_absolute() or config_path is None else config_path.parent / p


class PrefilterConfig(BaseModel):
    """Harvest pre-filters (`[prefilter]`): cheap checks before any model sees a document."""

    model_config = ConfigDict(extra="forbid")

    enabled: list[str] = Field(
        default_factory=lambda: ["html", "length", "language", "vocabulary", "duplicate"],
        description="pre-filters to run, in this order",
    )
    languages: list[str] = Field(default_factory=lambda: ["en"], description="ISO 639-1 codes to keep")
    min_chars: int = Field(default=100, ge=0)
    max_chars: int = Field(default=100_000, ge=1)
    near_duplicate_threshold: float = Field(default=0.8, gt=0, lt=1)
    num_perm: int = Field(default=64, ge=16, le=512)
    shingle_words: int = Field(default=3, ge=1, le=10)
    min_vocabulary_hits: int = Field(default=3, ge=0)
    extra_terms: list[str] = Field(default_factory=list, description="more medical terms to match")


class ImportConfig(BaseModel):
    """Limits of `import-healthbench` and `import-kqa` (`[import]`): a line over them is refused alone."""

    model_config = ConfigDict(extra="forbid")

    max_record_bytes: int = Field(default=5_000_000, ge=1_000, description="a longer JSONL line is refused")
    max_criteria: int = Field(
        default=500, ge=1, description="more rubric items (HealthBench) or statements (K-QA) are refused"
    )


class ExecutorConfig(BaseModel):
    """`[executor]`: where `curate`, `answer`, `grade`, `eval` and `update` run their items
    (`livemed.cli.executors`; `--executor` overrides `kind`)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["inprocess", "ray"] = "inprocess"
    address: str | None = Field(
        default=None, description='Ray cluster: "auto", "ray://HOST:10001", or unset for a local instance'
    )
    workers: int = Field(default=2, ge=1, le=1024, description="Ray workers, each one livemed process")
    cpus_per_worker: float = Field(default=1.0, gt=0)


class UpdateConfig(BaseModel):
    """`[update]`: what each `livemed update` (and `livemed schedule`) runs, only for what is new."""

    model_config = ConfigDict(extra="forbid")

    sources: list[str] | None = Field(default=None, description="sources to harvest (default: [sources])")
    curator: str = Field(default="offline/curate-baseline", description="the curation model")
    writer: str | None = Field(default=None, description="rubric writer (none: rubrics are skipped)")
    models: list[str] = Field(default_factory=list, description="candidates to answer the new cases")
    judge: str | None = Field(default=None, description="grader of the answers (none: grading skipped)")
    mode: Literal["per-criterion", "batched"] = "per-criterion"
    samples: int = Field(default=1, ge=1)
    convention: Literal["livemed", "healthbench"] = "livemed"
    max_cost: float | None = Field(default=None, gt=0, description="spending limit per update (USD)")


class Config(BaseModel):
    """The whole project configuration."""

    model_config = ConfigDict(extra="forbid")

    store: str | None = None
    domain: str | None = Field(
        default=None, description='domain pack: "medical" (the default), "legal", or a pack folder'
    )
    cutoff: date | None = Field(default=None, description="keep only documents published after this date")
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    curate: CurateConfig = Field(default_factory=CurateConfig)
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)
    prefilter: PrefilterConfig = Field(default_factory=PrefilterConfig)
    imports: ImportConfig = Field(default_factory=ImportConfig, alias="import")  # `import` is a keyword
    update: UpdateConfig = Field(default_factory=UpdateConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    path: Path | None = Field(default=None, exclude=True, description="where this config was read from")

    def model_settings(self, model_id: str) -> ModelConfig:
        """The settings of `model_id`: its `[models]` table, else the defaults; an `hf/` model that
        does not set `max_concurrency` has `HF_CONCURRENCY` (its batch on one GPU)."""
        settings = self.models.get(model_id)
        if settings is None:
            settings = ModelConfig()
        if model_id.startswith("hf/") and "max_concurrency" not in settings.model_fields_set:
            return settings.model_copy(update={"max_concurrency": HF_CONCURRENCY})
        return settings


def load_config(path: str | Path | None = None) -> Config:
    """Read `path`, or `./livemed.toml` when it exists, or return the defaults."""
    if path is None:
        candidate = Path.cwd() / CONFIG_FILE
        if not candidate.exists():
            return Config()
        path = candidate
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist (run `livemed init` to write one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {describe_validation_error(exc)}") from None
    config.path = path.resolve()
    _anchor_paths(config.curate, config.path.parent)
    return config


def project_path(value: str, folder: Path) -> str:
    """A path written in livemed.toml, relative to the file's folder unless it is absolute."""
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else folder / p)


def _anchor_paths(curate: CurateConfig, folder: Path) -> None:
    """`[curate]`'s evidence file and index folder, relative to livemed.toml (a named corpus stays a name),
    so a project folder works from any working folder and after it is moved."""
    if curate.evidence is not None and curate.evidence not in NAMED_CORPORA:
        curate.evidence = project_path(curate.evidence, folder)
    if curate.index_dir is not None:
        curate.index_dir = project_path(curate.index_dir, folder)


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, naming the field and the offending value."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        value = error.get("input")
        shown = repr(value) if not isinstance(value, dict) else "{…}"
        if len(shown) > 80:
            shown = shown[:77] + "…"
        parts.append(f"{where}: {error['msg']} (got {shown})")
    return "; ".join(parts)


def store_location(config: Config, override: str | None = None) -> str:
    """Where the store is: --store, then $LIVEMED_STORE, then the project file, then ./livemed.db."""
    if override:
        return override
    env = os.environ.get("LIVEMED_STORE")
    if env:
        return env
    if config.store:
        if "://" in config.store or config.path is None:
            return config.store
        return str((config.path.parent / config.store).resolve())
    return DEFAULT_STORE


STARTER = """\
# livemed project file. Command-line options (--store, --since, --max-cost, …) override it.
# Docs: see README.md ("Configuration").

# Where records are kept: a SQLite file (relative to this file) or a PostgreSQL URL such as
# "postgresql+psycopg://user@localhost/livemed". $LIVEMED_STORE and --store override it.
store = "livemed.db"

# The domain pack: "medical" (the default), "legal", or the folder of your own pack (docs/domains.md).
# --domain overrides it.
# domain = "medical"

# Keep only documents published after this date: it is what makes the benchmark contamination-resistant.
cutoff = {cutoff}

# Curation thresholds (a case is kept only when its score is strictly above the threshold).
[thresholds]
s_inf = 0.5
s_align = 0.5
# The leak audit: reject a case when the prompt a candidate sees already states more than this share
# of an advice element (its content words, in shared runs of words) or of a diagnostic case's diagnosis.
answer_leak = 0.7

# Curation: the evidence corpus for the Validator's alignment check, and the narrative checklists.
# [curate]
# evidence = "medquad_answered_pairs.jsonl.gz"   # JSONL (id, title, text, url, licence) or MedQuAD;
#                                                  # "medquad": the copy `livemed evidence fetch` keeps
# retriever = "bm25"                              # bm25 | europepmc | dense | none
# evidence_k = 3
# checklists = { default = ["age", "sex", "chief complaint", "onset/duration", "symptom characteristics",
#                "relevant history", "medications", "allergies"] }
# llm_audit = true                                # the model audits paraphrases fuzzy matching missed
# grounding_min_score = 90                        # rapidfuzz partial ratio (0-100) to count as grounded
# candidate_view = "narrative"                   # what the candidate reads: "narrative" (slots + query)
#                                                  # or "post" (the asker's title and post, threads only)
# candidate_view_by_source = { stackexchange = "post" }

# Data sources and their settings (`livemed sources` lists them). API keys: name the variable.
# [sources.europepmc]
# licences = ["cc by", "cc0"]
# [sources.pubmed]
# email = "you@example.org"
# api_key_env = "NCBI_API_KEY"
# [sources.stackexchange]
# site = "medicalsciences"
# api_key_env = "STACKEXCHANGE_KEY"
# [sources.files]
# path = "threads.jsonl"
# mapping = { id = "id", date = "created", post = "body", title = "title", replies = "answers" }

# Harvest pre-filters.
# [prefilter]
# languages = ["en"]
# min_chars = 100
# max_chars = 100000
# near_duplicate_threshold = 0.8

# Models: ids are "provider/name". API keys are never written here: name the environment variable.
# [models."openai/gpt-4o-mini"]
# api_key_env = "OPENAI_API_KEY"
# max_concurrency = 512            # calls in flight at most (narrowed on 429s, grown back)
# requests_per_minute = 500
#
# [models."vllm/Qwen/Qwen2.5-7B-Instruct"]
# base_url = "http://localhost:8000/v1"

# Prices in US dollars per million tokens, for cost accounting and --max-cost.
# [prices."openai/gpt-4o-mini"]
# input = 0.15
# output = 0.60

# `livemed update` (and `livemed schedule`): what each incremental pass runs (docs/live.md).
# [update]
# sources = ["europepmc"]              # default: every source above
# curator = "offline/curate-baseline"
# writer = "offline/rules"             # none: rubrics are skipped
# models = ["openai/gpt-4o-mini"]      # none: answers, grades and scores are skipped
# judge = "openai/gpt-4o"
# max_cost = 20.0

# Limits of import-healthbench and import-kqa: a longer line, or more rubric items, is refused alone.
# [import]
# max_record_bytes = 5000000
# max_criteria = 500

# Analysis and report (`livemed leaderboard`, `contamination`, `taxonomy`, `report`).
# [analysis]
# cutoffs = "cutoffs.toml"        # your model training-cutoff registry, on top of the bundled one
# out_dir = "results"             # tables are written here as CSV and JSON
# report = "results/report.html"
# seed = 0
# resamples = 2000                # bootstrap resamples
# min_post_cases = 50             # fewer post-cutoff cases: "insufficient data", no verdict
# alpha = 0.05                    # Benjamini–Hochberg false discovery rate
"""


def starter_config(cutoff: date) -> str:
    return STARTER.replace("{cutoff}", cutoff.isoformat())
