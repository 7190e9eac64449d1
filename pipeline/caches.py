"""Where the LLM and embedding caches live, decided in one place.

1. `cache_url` set (PIPELINE_CACHE_URL=postgresql://...): both caches are PostgreSQL tables
   (`graphrag_llm_cache`, `graphrag_embedding_cache`). The choice when a run's steps execute on
   several machines: SQLite on shared or object storage is not safe.
2. else `cache_dir` set (PIPELINE_CACHE_DIR): SQLite files `llm.sqlite` and `embeddings.sqlite` there.
3. else the storage root is a local path: the same files under `<storage_root>/_cache`.
4. else (the storage root is a remote URI such as s3://...): a ValueError saying what to set.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from pipeline.embedding import EmbeddingCache, VectorCache
from pipeline.llm.cache import LLMCache, ResponseCache
from pipeline.settings import Settings

LLM_FILE = "llm.sqlite"
EMBEDDING_FILE = "embeddings.sqlite"


def _scheme(location: str) -> str:
    scheme = urlparse(location).scheme.lower()
    return "" if len(scheme) == 1 else scheme  # a drive letter (C:\...) is a local path, not a scheme


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


def _local_path(location: str) -> Path:
    if _scheme(location) == "file":
        return Path(unquote(urlparse(location).path))
    return Path(location).expanduser()


def open_llm_cache(settings: Settings) -> ResponseCache:
    """The LLM response cache the settings call for (PostgreSQL, or SQLite in a local folder)."""
    if settings.cache_url is not None:
        from pipeline.llm.pg_cache import PgLLMCache

        return PgLLMCache(settings.cache_url.get_secret_value())
    return LLMCache(local_cache_folder(settings) / LLM_FILE)


def open_embedding_cache(settings: Settings) -> VectorCache:
    """The embedding cache the settings call for (PostgreSQL, or SQLite in a local folder)."""
    if settings.cache_url is not None:
        from pipeline.pg_embedding_cache import PgEmbeddingCache

        return PgEmbeddingCache(settings.cache_url.get_secret_value())
    return EmbeddingCache(local_cache_folder(settings) / EMBEDDING_FILE)
