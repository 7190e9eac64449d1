"""One typed settings model for the whole pipeline.

Values come, highest priority first, from: explicit keyword arguments, `PIPELINE_*` environment
variables, a YAML file named by `PIPELINE_CONFIG_FILE` (or passed as `config_file`), and the
defaults documented here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from pipeline.core.location import parse_location
from pipeline.settings.methods import IndexMethodSettings
from pipeline.settings.service import ServiceSettings


class ConfigError(ValueError):
    """A setting is missing or invalid; the message names the setting and what to do."""


class _YamlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], path: str | None) -> None:
        super().__init__(settings_cls)
        self._data: dict[str, Any] = {}
        if path:
            p = Path(path)
            if not p.is_file():
                raise ConfigError(f"PIPELINE_CONFIG_FILE={path!r} does not exist")
            loaded = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            if not isinstance(loaded, dict):
                raise ConfigError(f"{path}: expected a mapping of setting names to values")
            self._data = loaded

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self._data.items() if k in self.settings_cls.model_fields}


def _aws_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name, "").strip()
    return SecretStr(value) if value else None


class Settings(BaseSettings, ServiceSettings, IndexMethodSettings):
    """Every knob of the pipeline, with its default. Env var = `PIPELINE_` + upper-cased name."""

    # hide_input_in_errors: a validation error would otherwise print every input value, cache_url's
    # password included (model-level errors show the whole input dict).
    model_config = SettingsConfigDict(env_prefix="PIPELINE_", extra="ignore", hide_input_in_errors=True)

    config_file: str | None = Field(
        default=None, description="YAML file with settings (env: PIPELINE_CONFIG_FILE)"
    )

    # Where things live
    storage_root: Path | str = Field(
        default=Path("data/storage"),
        description="Parquet + LanceDB, one folder per namespace: a local path (kept as a Path) or an "
        "s3://bucket/prefix URI (kept as a str) on any S3-compatible endpoint",
    )
    input_root: Path = Field(default=Path("data/input"), description="Documents, one folder per namespace")
    lance_keep_versions: int = Field(
        default=2,
        ge=1,
        description="Newest versions of each LanceDB table kept after a replace, besides the version the "
        "replace started from (always kept, so a query that opened it finishes); older files are deleted",
    )
    # An s3:// storage root: the endpoint and keys. Unset keys fall back to the standard AWS variables here,
    # and to the AWS SDK's own chain (profile, instance role) when those are unset too.
    s3_endpoint_url: str | None = Field(
        default=None, description="http(s)://host:port of an S3-compatible server; unset = AWS S3"
    )
    s3_region: str = Field(
        default_factory=lambda: (
            os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        ),
        description="Default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1",
    )
    s3_access_key_id: SecretStr | None = Field(default_factory=lambda: _aws_secret("AWS_ACCESS_KEY_ID"))
    s3_secret_access_key: SecretStr | None = Field(
        default_factory=lambda: _aws_secret("AWS_SECRET_ACCESS_KEY"), description="Never logged or shown"
    )

    @field_validator("storage_root", mode="before")
    @classmethod
    def _storage_location(cls, v: Any) -> Any:
        return parse_location(v) if isinstance(v, str | os.PathLike) else v

    @field_validator(
        "s3_endpoint_url",
        "s3_access_key_id",
        "s3_secret_access_key",
        "cache_url",
        "cache_dir",
        "service_limits_url",
        "llm_concurrency",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, v: Any) -> Any:
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("s3_endpoint_url")
    @classmethod
    def _s3_endpoint(cls, v: str | None) -> str | None:
        if v is not None and (urlsplit(v).scheme not in ("http", "https") or not urlsplit(v).netloc):
            raise ValueError(
                "s3_endpoint_url (PIPELINE_S3_ENDPOINT_URL) must be a URL with the http or https scheme"
            )
        return v

    # Ingest
    max_document_bytes: int = Field(default=20_000_000, ge=1, description="Larger documents are rejected")
    fallback_encodings: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Tried after UTF-8, e.g. ['latin-1']"
    )
    id_column: str = "id"
    title_column: str = "title"
    text_column: str = "text"

    # Chunking (GraphRAG default 1200/100, o200k_base)
    chunk_size: int = Field(default=1200, ge=16)
    chunk_overlap: int = Field(default=100, ge=0)
    encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base"

    # Embeddings
    embedding_provider: Literal["local", "openai"] = "local"
    embedding_model: str = Field(
        default="all-MiniLM-L6-v2", description="Model name (openai provider) or label (local)"
    )
    embedding_base_url: str | None = None
    embedding_api_key_env: str = "OPENAI_API_KEY"
    embedding_batch_size: int = Field(default=64, ge=1)
    embedding_device: str = "cpu"
    entity_vector_description_words: int = Field(
        default=0,
        ge=0,
        le=200,
        description="Words of an entity's description embedded after its title (0: the title alone). "
        "More lets entity vector search find an entity by what it is, at the cost of embedding longer "
        "texts (on MuSiQue's 10,800 entities: 22 s as titles, 64 s with 12 words, 130 s with 40)",
    )
    graphrag_export: bool = Field(
        default=False,
        description="Also write LanceDB tables under Microsoft GraphRAG's default names "
        "(entity_description, community_full_content, text_unit_text) with the texts it embeds, so its "
        "query engine reads the index unchanged; costs embedding those texts once (cached)",
    )
    embedding_quantize: Literal["none", "int8"] = Field(
        default="none",
        description="local provider: 'int8' runs MiniLM's linear layers as int8 (torch dynamic "
        "quantization, made at load from the shipped weights): faster on CPU, slightly different "
        "vectors, its own cache entries",
    )
    # openai embedding provider: same shape as the llm_* knobs, plus token budgets (tiktoken counts)
    embedding_concurrency: int = Field(default=4, ge=1)
    embedding_timeout_s: float = Field(default=60.0, gt=0)
    embedding_max_retries: int = Field(default=4, ge=0)
    embedding_max_input_tokens: int = Field(default=8191, ge=16, description="Longer texts are split")
    embedding_batch_tokens: int = Field(default=100_000, ge=16, description="Tokens per request at most")

    # LLM (the LLM layer reads these)
    llm_provider: Literal["offline", "openai"] = "offline"
    llm_model: str = "gpt-4o-mini"
    llm_base_url: str | None = None
    llm_api_key_env: str = "OPENAI_API_KEY"
    # unset concurrency: 8 for OpenAI's API, 1 for any other base URL (a local server's capacity)
    llm_concurrency: int | None = Field(default=None, ge=1, description="Requests in flight at once")
    llm_timeout_s: float = Field(default=60.0, gt=0, description="A whole (unstreamed) reply, an embedding")
    llm_stream: bool = Field(default=True, description="Stream chat replies (pipeline.llm.stream)")
    llm_first_token_timeout_s: float = Field(
        default=300.0, gt=0, description="Streamed reply: time to its first token (the prompt is read first)"
    )
    llm_idle_timeout_s: float = Field(default=30.0, gt=0, description="Streamed reply: longest gap in it")
    llm_max_retries: int = Field(default=4, ge=0)
    llm_temperature: float = 0.0
    llm_max_tokens: int = Field(default=2000, ge=1, description="Output limit of tasks without their own")
    # Output limits per task, sent as max_tokens. A reply cut off at its limit is asked again once with
    # twice the limit (at most llm_max_output_tokens), then fails: it is never used or cached.
    llm_extraction_max_tokens: int = Field(
        default=4000, ge=1, description="Entities, relationships and claims of one text unit"
    )
    llm_report_max_tokens: int = Field(default=4000, ge=1, description="A community report")
    llm_description_max_tokens: int = Field(default=1000, ge=1, description="A merged description")
    llm_map_max_tokens: int = Field(
        default=512, ge=1, description="A global map answer (also the map batches' output reserve)"
    )
    llm_reduce_max_tokens: int = Field(
        default=1024, ge=1, description="The global reduce answer (also its output reserve)"
    )
    llm_local_answer_max_tokens: int = Field(default=2000, ge=1, description="A local search answer")
    llm_max_output_tokens: int = Field(
        default=16_384, ge=1, description="The most a retry of a cut-off reply may ask for"
    )
    llm_json_mode: Literal["auto", "json_schema", "json_object"] = Field(
        default="auto", description="auto: json_schema, falling back to json_object if the server rejects it"
    )
    llm_prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="USD per 1M tokens (prompt, completion) by model, merged over pipeline.llm.usage's table",
    )
    llm_max_failed_share: float = Field(
        default=0.5,
        ge=0,
        lt=1,
        description="An LLM stage (extraction, community reports) that loses more than this share of its "
        "units, or all of them, fails its step after writing what it has; a smaller loss is a warning",
    )
    llm_budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="A run stops sending LLM requests once its spend reaches this (pipeline.llm.budget); "
        "cached answers stay free, so the next run resumes. Unset = no limit",
    )

    # Scale-out: extraction and embedding fan out over document shards (Dagster partitions
    # namespace x shard). Read when the Dagster definitions load, so every worker must see the same value.
    shards: int = Field(default=1, ge=1, le=256, description="Document shards per namespace")
    dask_scheduler: str | None = Field(
        default=None,
        description="tcp://host:port of a dask.distributed scheduler: Dagster runs execute their steps "
        "on its workers (dagster-dask); unset = Dagster's own executors",
    )

    # Graph extraction (GraphRAG defaults: these four types, 1 gleaning round)
    entity_types: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["organization", "person", "geo", "event"],
        description="Entity types to extract (comma-separated in the env var)",
    )
    extraction_max_gleanings: int = Field(default=1, ge=0, description="Extra 'what did you miss' rounds")
    extract_claims: bool = True
    claim_description: str = "Any claims or facts that could be relevant to information discovery."
    offline_cooccurrence_window: int = Field(
        default=1,
        ge=0,
        description="Sentences that link two entities: 1 = same sentence, 0 = whole text unit",
    )
    offline_min_npmi: float = Field(
        default=0.0, ge=-1, le=1, description="Co-occurrence edges below this NPMI are pruned ..."
    )
    offline_keep_weight: float = Field(default=2.0, description="... unless seen in this many sentences")
    offline_drop_common_words: bool = Field(
        default=False,
        description="Drop untyped one-word offline names the corpus also writes in lower case ('Hope'); off by "
        "default: it costs local search recall on MuSiQue (R@10 76.8 -> 75.1 with the NLP extractor)",
    )
    # Entity resolution and description summaries
    resolution_fuzzy_threshold: float = Field(
        default=92.0, ge=0, le=100, description="rapidfuzz ratio to merge same-type names; 100 = exact only"
    )
    description_max_tokens: int = Field(default=200, ge=16, description="Offline summary budget")
    summarize_max_input_tokens: int = Field(default=4000, ge=64, description="Per LLM summary call")
    summarize_max_words: int = Field(default=500, ge=10)
    # Communities (hierarchical Leiden)
    max_cluster_size: int = Field(default=10, ge=2)
    leiden_seed: int = 0xDEADBEEF
    leiden_resolution: float = Field(default=1.0, gt=0)
    # Community reports (GraphRAG: 8,000 context tokens, 2,000 words)
    report_max_input_tokens: int = Field(
        default=8000, ge=64, description="Context budget per report; larger communities use sub-reports"
    )
    report_max_words: int = Field(default=2000, ge=10, description="Report length asked of the LLM")
    # Local search (GraphRAG: 12,000 context tokens): the answer prompt, data tables included, fits this
    local_context_max_tokens: int = Field(
        default=12_000, ge=1000, description="Tokens of the local answer prompt, its data tables included"
    )
    local_rrf_k: int = Field(
        default=80,
        ge=1,
        description="RRF constant of local search's entity matching and community ranking "
        "(graphrag-ts's service default, rrfK 80)",
    )
    # Global search's report selection (pipeline.query.global_.selection)
    global_selection: Literal["auto", "dynamic", "static"] = Field(
        default="auto",
        description="dynamic: rate reports top-down and map the relevant ones; static: map one level; "
        "auto: dynamic above global_dynamic_min_communities communities",
    )
    global_dynamic_min_communities: int = Field(
        default=300, ge=0, description="Communities above which auto selection is dynamic"
    )
    global_max_rated: int = Field(default=160, ge=1, description="Reports rated per question (dynamic)")
    global_max_map_batches: int = Field(
        default=8, ge=1, description="Map calls per question (dynamic selection and level auto)"
    )
    global_rate_threshold: float = Field(
        default=2.0, ge=0, le=10, description="A report rated this (0-10) or more is mapped"
    )
    # DRIFT search (pipeline.query.drift.search); Microsoft GraphRAG's defaults are 20 / 5 / 3 / 20 / 32:
    # up to 66 model calls a question. Ours: at most primer_folds + depth x breadth + 1 = 9.
    drift_primer_k: int = Field(default=8, ge=1, le=100, description="Community reports the primer reads")
    drift_primer_folds: int = Field(default=2, ge=1, le=20, description="Primer calls the reports split into")
    drift_depth: int = Field(default=2, ge=0, le=10, description="Rounds of follow-up local searches")
    drift_breadth: int = Field(default=3, ge=1, le=50, description="Follow-ups answered per round")
    drift_concurrency: int = Field(default=4, ge=1, le=64, description="DRIFT calls in flight at once")
    # Lazy search (pipeline.query.lazy): at most 1 + 2 x ceil(budget / units_per_call) + 1 calls a question
    lazy_budget: int = Field(
        default=100, ge=1, le=10_000, description="Units rated per question (MS: 100/500/1500)"
    )
    lazy_subqueries: int = Field(
        default=3, ge=1, le=8, description="Subqueries the question is expanded into"
    )
    lazy_units_per_call: int = Field(default=8, ge=1, le=32, description="Units rated in one call")
    lazy_max_irrelevant: int = Field(
        default=3, ge=1, le=100, description="Irrelevant communities ending a branch"
    )
    lazy_threshold: float = Field(
        default=2.0, ge=0, le=10, description="A unit rated this (0-10) is relevant"
    )
    # Vector query tool (pipeline/vector_tool): the PostgreSQL server for `query vector --store pgvector`
    pgvector_dsn: str | None = Field(
        default=None, description="PostgreSQL URI with the pgvector extension; one schema per namespace"
    )
    # LLM and embedding caches (pipeline/caches.py): PostgreSQL when several machines share a run (SQLite
    # on shared or object storage is not safe), else SQLite files in cache_dir or <storage_root>/_cache.
    cache_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL of the cache server (env PIPELINE_CACHE_URL); never logged or shown",
    )
    cache_dir: str | None = Field(
        default=None, description="Local folder for the SQLite caches (env PIPELINE_CACHE_DIR)"
    )

    @field_validator("fallback_encodings", "entity_types", mode="before")
    @classmethod
    def _split_csv(cls, v: Any) -> Any:
        if isinstance(v, str):
            if v.lstrip().startswith("["):  # a JSON list is accepted too
                return json.loads(v)
            return [s.strip() for s in v.split(",") if s.strip()]
        return v

    @field_validator("cache_url", "service_limits_url")
    @classmethod
    def _postgres_url(cls, v: SecretStr | None, info: Any) -> SecretStr | None:
        if v is not None and not v.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError(
                f"{info.field_name} (PIPELINE_{info.field_name.upper()}) must be a postgresql:// URL"
            )
        return v

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = os.environ.get("PIPELINE_CONFIG_FILE")
        return (init_settings, env_settings, _YamlSource(settings_cls, path))

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy with the given (non-None) values replaced and re-validated."""
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return Settings.model_validate(data)


def load_settings(**overrides: Any) -> Settings:
    """Settings from env/YAML/defaults, then `overrides` (None values ignored)."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ConfigError:
        raise
    except Exception as exc:  # pydantic.ValidationError: re-raise with a settings-shaped message
        raise ConfigError(f"invalid settings: {exc}") from exc
