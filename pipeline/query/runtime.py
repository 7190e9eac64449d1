"""What a query needs, built from settings in one place: the namespace's store, the engine, the embedder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.caches import open_embedding_cache
from pipeline.embedding import CachedEmbedder, make_embedder
from pipeline.settings import Settings, load_settings
from pipeline.store import NamespaceStore


@dataclass
class QueryRuntime:
    settings: Settings
    store: NamespaceStore
    engine: Any
    embedder: CachedEmbedder


def cached_embedder(settings: Settings) -> CachedEmbedder:
    return CachedEmbedder(
        make_embedder(settings),
        open_embedding_cache(settings),
        batch_size=settings.embedding_batch_size,
    )


def query_runtime(
    namespace: str, *, settings: Settings | None = None, engine: Any = None, embedder: Any = None
) -> QueryRuntime:
    """Store scoped to `namespace` (validated), plus the configured engine and embedder unless given."""
    from pipeline.llm import make_engine

    s = settings or load_settings()
    return QueryRuntime(
        settings=s,
        store=NamespaceStore.from_settings(s, namespace),
        engine=engine if engine is not None else make_engine(s),
        embedder=embedder if embedder is not None else cached_embedder(s),
    )
