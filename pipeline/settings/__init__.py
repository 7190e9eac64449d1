"""One typed settings model for the whole pipeline.

Values come, highest priority first, from: explicit keyword arguments, `PIPELINE_*` environment
variables, a YAML file named by `PIPELINE_CONFIG_FILE` (or passed as `config_file`), and the
defaults documented here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from pipeline.core.location import parse_location
from pipeline.settings.indexing import (
    ChunkingSettings,
    CommunitySettings,
    ExtractionSettings,
    IngestSettings,
    ReportSettings,
    ResolutionSettings,
)
from pipeline.settings.methods import IndexMethodSettings
from pipeline.settings.models import EmbeddingSettings, LLMSettings, OutputLimitSettings
from pipeline.settings.query import QuerySettings
from pipeline.settings.service import ServiceSettings


class ConfigError(ValueError):
    """A setting is missing or invalid; the message names the setting and what to do."""


class _YamlSource(YamlConfigSettingsSource):
    """pydantic-settings' YAML source with the two checks it lacks: a file that was named but is missing
    would read as empty, and a file that is not a mapping would fail with a message naming no setting."""

    def __init__(self, settings_cls: type[BaseSettings], path: str | None) -> None:
        if path and not Path(path).is_file():
            raise ConfigError(f"PIPELINE_CONFIG_FILE={path!r} does not exist")
        super().__init__(settings_cls, yaml_file=path or None)

    def _read_file(self, file_path: Path) -> dict[str, Any]:  # type: ignore[override]
        loaded = super()._read_file(file_path)
        if not isinstance(loaded, dict):
            raise ConfigError(f"{file_path}: expected a mapping of setting names to values")
        return loaded


def _aws_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name, "").strip()
    return SecretStr(value) if value else None


class Settings(
    BaseSettings,
    IngestSettings,
    ChunkingSettings,
    ExtractionSettings,
    ResolutionSettings,
    CommunitySettings,
    ReportSettings,
    EmbeddingSettings,
    LLMSettings,
    QuerySettings,
    OutputLimitSettings,
    ServiceSettings,
    IndexMethodSettings,
):
    """Every knob of the pipeline, with its default. Env var = `PIPELINE_` + upper-cased name.

    Fields live in one section per stage (`indexing`, `models`, `query`, `service`, `methods`); an op's options are
    built from its own section, and this class mixes every section in, so each field is still
    `settings.<name>` and `PIPELINE_<NAME>`. What stays here is where things live (storage, caches,
    shards) and the checks across sections."""

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
        "replace started from (always kept, so a query that opened it finishes); older files are deleted and "
        "the table compacted. A replace writes only the rows that changed, and nothing when none did",
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
        json_schema_extra={"doc_default": "AWS_REGION, AWS_DEFAULT_REGION or us-east-1"},
    )
    s3_access_key_id: SecretStr | None = Field(
        default_factory=lambda: _aws_secret("AWS_ACCESS_KEY_ID"),
        description="Default: AWS_ACCESS_KEY_ID, else the AWS SDK's chain; never logged or shown",
        json_schema_extra={"doc_default": "AWS_ACCESS_KEY_ID"},
    )
    s3_secret_access_key: SecretStr | None = Field(
        default_factory=lambda: _aws_secret("AWS_SECRET_ACCESS_KEY"),
        description="Default: AWS_SECRET_ACCESS_KEY, else the AWS SDK's chain; never logged or shown",
        json_schema_extra={"doc_default": "AWS_SECRET_ACCESS_KEY"},
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

    # Scale-out: extraction and embedding fan out over document shards (Dagster partitions
    # namespace x shard). Read when the Dagster definitions load, so every worker must see the same value.
    shards: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Document shards per namespace: extraction and embedding partitioned by namespace x "
        "shard (read when the Dagster definitions load, so every worker must see the same value)",
    )
    dask_scheduler: str | None = Field(
        default=None,
        description="tcp://host:port of a dask.distributed scheduler: Dagster runs execute their steps "
        "on its workers (dagster-dask), and `pipeline index` splits a namespace into shard runs; unset = "
        "Dagster's own executors",
    )

    # LLM and embedding caches (pipeline/caches.py): PostgreSQL when several machines share a run (SQLite
    # on shared or object storage is not safe), else SQLite files in cache_dir or <storage_root>/_cache.
    cache_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL: the LLM and embedding caches in PostgreSQL, shared by every worker; "
        "never logged or shown",
    )
    cache_dir: str | None = Field(
        default=None,
        description="Local folder for the SQLite caches when cache_url is unset; unset = "
        "<storage_root>/_cache, and required with an s3:// storage root (SQLite never goes on object storage)",
    )

    @field_validator(
        "fallback_encodings",
        "entity_types",
        "service_cors_origins",
        "service_upload_namespaces",
        mode="before",
    )
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
        if self.embedding_precision == "bf16" and self.embedding_quantize == "int8":
            raise ValueError(
                "embedding_precision 'bf16' and embedding_quantize 'int8' exclude each other: choose one"
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


def default_of(name: str) -> Any:
    """Setting `name`'s default, for code that takes that value when built without settings (a config
    made by hand, a test's): the literal is written once, in the settings model."""
    return Settings.model_fields[name].get_default(call_default_factory=True)


def load_settings(**overrides: Any) -> Settings:
    """Settings from env/YAML/defaults, then `overrides` (None values ignored)."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ConfigError:
        raise
    except Exception as exc:  # pydantic.ValidationError: re-raise with a settings-shaped message
        raise ConfigError(f"invalid settings: {exc}") from exc
