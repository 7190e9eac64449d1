"""The composition root: the one module that knows the concrete engine, embedders and caches, and
builds them from `Settings`. The CLI, the service, the Dagster resources, the query functions and
the benches get their parts here; every other module types against the protocols
(`pipeline.engine.base.Engine`, `pipeline.embeddings.base.Embedder`, `pipeline.caches.base`).

Where the caches live, in order:
1. `cache_url` set (PIPELINE_CACHE_URL=postgresql://...): both caches are PostgreSQL tables
   (`graphrag_llm_cache`, `graphrag_embedding_cache`). The choice when a run's steps execute on
   several machines: SQLite on shared or object storage is not safe.
2. else `cache_dir` set (PIPELINE_CACHE_DIR): SQLite files `llm.sqlite` and `embeddings.sqlite` there.
3. else the storage root is a local path: the same files under `<storage_root>/_cache`.
4. else (the storage root is a remote URI such as s3://...): a ValueError saying what to set.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args
from urllib.parse import unquote, urlparse

from pipeline.caches.base import ResponseCache, VectorCache
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.caches.sqlite_llm import LLMCache
from pipeline.embeddings.base import Embedder, EmbedderConfigError
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.engine.base import Engine
from pipeline.engine.llm import LLMEngine, OutputLimits
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore
from pipeline.llm.budget import Budget
from pipeline.llm.client import LLMClient
from pipeline.llm.dry_run import CallLedger
from pipeline.llm.transport import read_api_key
from pipeline.llm.usage import DEFAULT_PRICES, Usage
from pipeline.settings import Settings, load_settings
from pipeline.settings.methods import IndexStage

LLM_FILE = "llm.sqlite"
EMBEDDING_FILE = "embeddings.sqlite"


# ---- caches ----------------------------------------------------------------------------------------
def _scheme(location: str) -> str:
    scheme = urlparse(location).scheme.lower()
    return "" if len(scheme) == 1 else scheme  # a drive letter (C:\...) is a local path, not a scheme


def _local_path(location: str) -> Path:
    if _scheme(location) == "file":
        return Path(unquote(urlparse(location).path))
    return Path(location).expanduser()


def local_cache_folder(settings: Settings) -> Path:
    """The folder for the SQLite caches (created if missing); ValueError when there is no local one."""
    if settings.cache_dir is not None:
        if _scheme(settings.cache_dir) not in ("", "file"):
            raise ValueError(
                f"PIPELINE_CACHE_DIR must be a local folder, not a {_scheme(settings.cache_dir)}:// URI; "
                "for caches shared by several machines set PIPELINE_CACHE_URL (postgresql://...)"
            )
        folder = _local_path(settings.cache_dir)
    else:
        root = str(settings.storage_root)
        if _scheme(root) not in ("", "file"):
            # Only the scheme is named: the rest of a storage URI is none of this message's business.
            raise ValueError(
                f"the storage root is a remote {_scheme(root)}:// URI, and SQLite caches cannot live on "
                "it: set PIPELINE_CACHE_URL to a postgresql:// URL (caches shared by every worker) or "
                "PIPELINE_CACHE_DIR to a local folder"
            )
        folder = _local_path(root) / "_cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_llm_cache(settings: Settings) -> ResponseCache:
    """The LLM response cache the settings call for (PostgreSQL, or SQLite in a local folder)."""
    if settings.cache_url is not None:
        from pipeline.caches.pg_llm import PgLLMCache  # psycopg is imported only when configured

        return PgLLMCache(settings.cache_url.get_secret_value())
    return LLMCache(local_cache_folder(settings) / LLM_FILE)


def open_embedding_cache(settings: Settings) -> VectorCache:
    """The embedding cache the settings call for (PostgreSQL, or SQLite in a local folder)."""
    if settings.cache_url is not None:
        from pipeline.caches.pg_embedding import PgEmbeddingCache

        return PgEmbeddingCache(settings.cache_url.get_secret_value())
    return EmbeddingCache(local_cache_folder(settings) / EMBEDDING_FILE)


# ---- LLM client and engine -------------------------------------------------------------------------
def make_llm_client(
    settings: Settings,
    usage: Usage | None = None,
    *,
    cache: bool = True,
    spent_usd: float = 0.0,
    dry_run: CallLedger | None = None,
    shared_cache: ResponseCache | None = None,
) -> LLMClient:
    """The chat client the settings describe (`llm_*`), with the cache `open_llm_cache` picks
    (or `shared_cache`, one already open).

    `spent_usd`: what the run spent before this client (`llm_budget_usd` counts it). `dry_run`: send
    nothing, count every call in the ledger instead (`pipeline.llm.dry_run`; no API key needed)."""
    budget = None
    if settings.llm_budget_usd is not None and dry_run is None:
        budget = Budget(settings.llm_budget_usd, spent_usd)
    client = LLMClient(
        model=settings.llm_model,
        api_key="dry-run"
        if dry_run is not None
        else read_api_key(settings.llm_api_key_env, settings.llm_base_url),
        base_url=settings.llm_base_url,
        temperature=settings.llm_temperature,
        max_tokens=settings.llm_max_tokens,
        max_output_tokens=settings.llm_max_output_tokens,
        timeout_s=settings.llm_timeout_s,
        first_token_timeout_s=settings.llm_first_token_timeout_s,
        idle_timeout_s=settings.llm_idle_timeout_s,
        stream=settings.llm_stream,
        max_retries=settings.llm_max_retries,
        timeout_retries=settings.llm_timeout_retries,
        concurrency=settings.llm_concurrency,
        json_mode=settings.llm_json_mode,
        cache=(shared_cache or open_llm_cache(settings)) if cache else None,
        usage=usage,
        prices={**DEFAULT_PRICES, **settings.llm_prices},
        budget=budget,
    )
    if dry_run is not None:
        dry_run.attach(client)
    return client


def make_engine(
    settings: Settings,
    usage: Usage | None = None,
    *,
    spent_usd: float = 0.0,
    dry_run: CallLedger | None = None,
    llm_cache: ResponseCache | None = None,
) -> Engine:
    """`OfflineEngine` unless `PIPELINE_LLM_PROVIDER=openai` (or `dry_run`: the LLM engine, sending
    nothing). `spent_usd` is the run's spend so far, for `llm_budget_usd`; `llm_cache` an LLM response
    cache already open, else the engine opens its own."""
    if settings.llm_provider == "openai" or dry_run is not None:
        client = make_llm_client(
            settings, usage=usage, spent_usd=spent_usd, dry_run=dry_run, shared_cache=llm_cache
        )
        return LLMEngine(client, OutputLimits.from_settings(settings))
    return OfflineEngine(usage=usage)


def engine_factory(settings: Settings) -> Callable[[], Engine]:
    """`make_engine` for a long-running process: a new engine per call, so that each query counts its
    own usage, but one LLM response cache for all of them. A cache opened per query costs a connection
    and its pragmas each time (a thread-local connection per cache instance, so a new one on every
    query), and more concurrent openers of one SQLite file mean more chances of the `database is
    locked` a test once saw and that could not be reproduced since."""
    cache = open_llm_cache(settings) if settings.llm_provider == "openai" else None
    return lambda: make_engine(settings, llm_cache=cache)


# With a model, a graph query spends its seconds waiting on HTTP: 32 in flight keep a provider busy
# without holding a thread per client of a large deployment.
LLM_GRAPH_QUERY_WORKERS = 32
# Offline, a graph query is Python computation and holds the GIL for most of its time, so a second graph
# thread runs no faster but takes the GIL from the quick lane. Under bench/bench_serve_load.py (2 cores,
# 16 clients, 11 MB index; two runs each) one graph thread gave basic p99 0.83-0.88 s and 7.6-7.9
# requests a second, two gave 1.3-1.6 s and 7.6. More cores are used by more processes, not threads.
OFFLINE_GRAPH_QUERY_WORKERS = 1


def graph_query_workers(settings: Settings) -> int:
    """How many graph queries (global, local, DRIFT, lazy, auto) the service runs at once: the setting,
    else `LLM_GRAPH_QUERY_WORKERS` with a model, else `OFFLINE_GRAPH_QUERY_WORKERS`."""
    if settings.service_graph_workers is not None:
        return settings.service_graph_workers
    if settings.llm_provider == "openai":
        return LLM_GRAPH_QUERY_WORKERS
    return OFFLINE_GRAPH_QUERY_WORKERS


# ---- indexing methods: the engine of each stage ------------------------------------------------------
INDEX_STAGES: tuple[str, ...] = get_args(IndexStage)
# What each method asks the model for (every other stage is done by the NLP extractor / offline forms).
# fast is Microsoft GraphRAG's `--method fast`: the graph without the model, reports written by it.
METHOD_FORMS: dict[str, dict[str, str]] = {
    "standard": dict.fromkeys(INDEX_STAGES, "model"),
    "fast": {**dict.fromkeys(INDEX_STAGES, "nlp"), "reports": "model"},
    "nlp": dict.fromkeys(INDEX_STAGES, "nlp"),
}


def index_method(settings: Settings) -> str:
    """The configured method; unset, `standard` with the openai provider (the model was asked for), else nlp."""
    if settings.index_method is not None:
        return settings.index_method
    return "standard" if settings.llm_provider == "openai" else "nlp"


def stage_forms(settings: Settings) -> dict[str, str]:
    """stage -> "model" | "nlp": the method's forms with `index_stage_methods` over them."""
    return {**METHOD_FORMS[index_method(settings)], **settings.index_stage_methods}


def make_stage_engines(
    settings: Settings,
    usage: Usage | None = None,
    *,
    spent_usd: float = 0.0,
    dry_run: CallLedger | None = None,
) -> dict[str, Engine]:
    """stage -> its engine, the one place a stage's engine is chosen: the LLM engine where its form is
    "model" (one client shared by those stages: one cache, budget and usage), else the offline engine
    (the NLP extractor and the offline forms), sharing the usage counter."""
    usage = usage if usage is not None else Usage()
    forms = stage_forms(settings)
    offline = OfflineEngine(usage=usage)
    model: Engine | None = None
    if "model" in forms.values():
        client = make_llm_client(settings, usage=usage, spent_usd=spent_usd, dry_run=dry_run)
        model = LLMEngine(client, OutputLimits.from_settings(settings))
    return {
        stage: model if form == "model" and model is not None else offline for stage, form in forms.items()
    }


# ---- embedders -------------------------------------------------------------------------------------
_models: dict[tuple[object, ...], Embedder] = {}
_models_lock = threading.Lock()


def make_embedder(settings: Settings) -> Embedder:
    """A new embedder of the configured provider (no cache)."""
    if settings.embedding_provider == "local":
        from pipeline.embeddings.minilm import LocalMiniLMEmbedder  # torch loads only when asked for

        return LocalMiniLMEmbedder(
            device=settings.embedding_device,
            batch_size=settings.embedding_batch_size,
            quantize=settings.embedding_quantize,
            precision=settings.embedding_precision,
        )
    if settings.embedding_provider == "openai":
        from pipeline.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder.from_settings(settings)
    raise EmbedderConfigError(f"unknown embedding provider {settings.embedding_provider!r}")


def shared_embedder(settings: Settings) -> Embedder:
    """The process's one embedder for these settings: loading MiniLM costs seconds, so every asset of
    a run and every query of a service share it."""
    key = (
        settings.embedding_provider,
        settings.embedding_model,
        settings.embedding_base_url,
        settings.embedding_device,
        settings.embedding_batch_size,
        settings.embedding_quantize,
        settings.embedding_precision,
    )
    with _models_lock:
        if key not in _models:
            _models[key] = make_embedder(settings)
        return _models[key]


def cached_embedder(settings: Settings) -> CachedEmbedder:
    """The shared embedder behind the persistent embedding cache."""
    return CachedEmbedder(
        shared_embedder(settings), open_embedding_cache(settings), level_overrides=settings.similarity_levels
    )


# ---- what a query needs ----------------------------------------------------------------------------
def report_writer(settings: Settings) -> Callable[..., Any]:
    """What writes a deferred community report when a query first needs it (`QueryScope.write_reports`):
    query code imports no index code, so the composition root hands it in."""
    from pipeline.index.community_reports_on_demand import write_on_demand

    return functools.partial(write_on_demand, settings=settings)


@dataclass
class QueryRuntime:
    settings: Settings
    store: NamespaceStore
    engine: Engine
    embedder: CachedEmbedder


def query_runtime(
    namespace: str,
    *,
    settings: Settings | None = None,
    engine: Engine | None = None,
    embedder: CachedEmbedder | None = None,
) -> QueryRuntime:
    """Store scoped to `namespace` (validated) and pinned to its committed index version (one per
    question: `NamespaceStore.pinned`), plus the configured engine and embedder unless given."""
    s = settings or load_settings()
    return QueryRuntime(
        settings=s,
        store=NamespaceStore.from_settings(s, namespace).pinned(),
        engine=engine if engine is not None else make_engine(s),
        embedder=embedder if embedder is not None else cached_embedder(s),
    )
