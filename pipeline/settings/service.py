"""The query service's settings (pipeline/service): keys, deadlines, per-key limits and output bounds.

A section of `Settings` (which reads them as `PIPELINE_SERVICE_*` and `PIPELINE_API_KEYS_FILE`, like
every other field); the service can be handed this section alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import NoDecode


class ServiceSettings(BaseModel):
    """The query service (pipeline.service): keys, deadlines, per-key limits and output bounds."""

    api_keys_file: Path | None = Field(
        default=None, description="YAML/JSON: tenant -> {key_sha256, namespaces} (env PIPELINE_API_KEYS_FILE)"
    )
    service_timeout_s: float = Field(default=30.0, gt=0, description="A query's default deadline")
    service_max_timeout_s: float = Field(default=120.0, gt=0, description="Longest deadline a query may ask")
    service_key_concurrency: int = Field(
        default=4, ge=1, description="Queries in flight per key (429 past it)"
    )
    service_key_rate: int | None = Field(
        default=None,
        ge=1,
        description="Queries per key in any window of service_key_rate_window_s (429 "
        "past it); unset = no rate limit",
    )
    service_key_rate_window_s: float = Field(
        default=60.0, gt=0, description="The rate limit's sliding window"
    )
    service_limits_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL: the per-key limit counted across every service process on that "
        "server (the cluster's PostgreSQL); unset = each process counts its own",
    )
    service_quick_workers: int = Field(
        default=4,
        ge=1,
        description="Threads for basic, vector and chunk-graph queries, which never queue behind graph queries",
    )
    service_graph_workers: int | None = Field(
        default=None,
        ge=1,
        description="Threads for global, local, DRIFT, lazy and auto queries (more wait their turn); unset = "
        "1 offline (a query is Python computation under the GIL), 32 with an LLM provider (it mostly waits)",
    )
    service_warm_start: bool = Field(
        default=True,
        description="At start-up, load in the background what a question of each namespace the keys file "
        "names reads (the 8 the query caches keep); off = only a namespace a key selects or warms (POST "
        "/v1/namespaces/{ns}/warm) is loaded before its first question",
    )
    service_malloc_arenas: int = Field(
        default=2,
        ge=0,
        description="graphrag-serve caps glibc's malloc arenas at this (0 = glibc's default of 8 per core; "
        "MALLOC_ARENA_MAX in the environment wins): more arenas let RSS creep up under many threads",
    )
    service_compute_threads: int = Field(
        default=1,
        ge=0,
        description="graphrag-serve's torch and OpenBLAS threads unless OMP_NUM_THREADS is set (0 = leave "
        "them): concurrent queries are the service's parallelism",
    )
    service_max_body_bytes: int = Field(default=65_536, ge=1024, description="Larger request bodies get 413")
    service_max_header_bytes: int = Field(
        default=16_384,
        ge=1024,
        description="A request whose head (request line and headers, as sent) is larger gets 431 before its key "
        "is checked, and is not read past this and one read",
    )
    service_body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="A request's body must have arrived this long after its headers, else 408 and the "
        "connection is closed; while it arrives it holds a slot of its key's concurrency",
    )
    service_stream_idle_s: float = Field(
        default=60.0,
        gt=0,
        description="A GET /mcp stream (or any GET event stream) that sends no event for this long is ended "
        "(keep-alive pings do not count); while open it holds a slot of its key's concurrency",
    )
    service_max_answer_chars: int = Field(default=8000, ge=100, description="Longer answers are cut")
    service_max_evidence_items: int = Field(default=20, ge=1, description="Evidence/hits/map answers kept")
    service_max_text_chars: int = Field(default=2000, ge=50, description="Each evidence text is cut here")
    service_cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Browser origins allowed to call the API from their pages (CORS), e.g. "
        "['http://127.0.0.1:3002'] (comma-separated or a JSON list in the env var); empty = CORS closed, "
        "so only same-origin pages and non-browser clients can use it",
    )
    service_upload_namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Namespaces indexed from an operator's own folder under input_root whose documents write "
        "keys may nevertheless change through the API (comma-separated or a JSON list); namespaces created "
        "with POST /v1/namespaces are writable without it",
    )
    service_upload_max_file_bytes: int = Field(
        default=50_000_000, ge=1, description="A larger uploaded file gets 413 (the limit is in the body)"
    )
    service_upload_max_request_bytes: int = Field(
        default=200_000_000,
        ge=1024,
        description="A larger upload request (every file part together) gets 413 before it is read",
    )
    service_namespace_max_bytes: int = Field(
        default=2_000_000_000,
        ge=1,
        description="Bytes of documents a namespace may hold through uploads (413 past it)",
    )
    service_namespace_max_documents: int = Field(
        default=5_000, ge=1, description="Documents a namespace may hold through uploads (413 past it)"
    )
