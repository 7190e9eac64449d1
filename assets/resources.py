"""Resources: the pipeline's settings and the embedder, configured in one place."""

from __future__ import annotations

import threading
from typing import Any

from dagster import ConfigurableResource

from pipeline.caches import open_embedding_cache
from pipeline.embedding import CachedEmbedder, make_embedder
from pipeline.settings import Settings, load_settings
from pipeline.store import NamespaceStore

_embedders: dict[tuple[Any, ...], Any] = {}
_embedders_lock = threading.Lock()


class PipelineSettingsResource(ConfigurableResource):
    """Overrides for pipeline.settings.Settings; anything left unset comes from PIPELINE_* env vars / YAML."""

    storage_root: str | None = None
    input_root: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    encoding: str | None = None
    max_document_bytes: int | None = None

    def get_settings(self) -> Settings:
        return load_settings(**self.model_dump())

    def store(self, namespace: str) -> NamespaceStore:
        return NamespaceStore.from_settings(self.get_settings(), namespace)


class EmbedderResource(ConfigurableResource):
    """The configured embedder wrapped with the persistent embedding cache."""

    settings: PipelineSettingsResource

    def get_embedder(self) -> CachedEmbedder:
        s = self.settings.get_settings()
        key = (s.embedding_provider, s.embedding_model, s.embedding_base_url, s.embedding_device)
        # One model per process: loading MiniLM costs seconds, so assets in a run share it.
        with _embedders_lock:
            if key not in _embedders:
                _embedders[key] = make_embedder(s)
            inner = _embedders[key]
        cache = open_embedding_cache(s)
        return CachedEmbedder(inner, cache, batch_size=s.embedding_batch_size)


def default_resources() -> dict[str, Any]:
    settings = PipelineSettingsResource()
    return {"pipeline_settings": settings, "embedder": EmbedderResource(settings=settings)}
