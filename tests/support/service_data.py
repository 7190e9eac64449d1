"""The query service's test data and doors: two tenants (acme, globex), each owning a namespace built by
hand (`build_tiny_index`'s graph plus the columns global search reads, community reports and the chunk
graph), `acme-empty` acme's but not indexed yet; their keys file; offline settings; uvicorn serving an app
in a thread; the request bodies of every endpoint.

The fixtures over them are conftest's: `service_data` (`build_service_data`, once per module that asks),
`offline_service` (a warmed offline QueryService over it), `service_url` (that under uvicorn) and
`service_client` (an httpx client of it)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import uvicorn

from deploy.local_cluster import free_port
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.chunk_graph.indexing import build_namespace_chunk_graph
from pipeline.core import schema
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder
from pipeline.io.store import NamespaceStore
from pipeline.service.app import create_app, server_config
from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests.support import tiny_index
from tests.support.tiny_index import COMMUNITIES, build_tiny_index, communities_table

KEY_A = "grk_test-acme-0123456789abcdef"


KEY_B = "grk_test-globex-fedcba9876543210"


TENANTS = {"acme": ("acme", "acme-empty"), "globex": ("globex",)}


@dataclass
class ServiceData:
    storage_root: Path
    keys_file: Path
    embedder: CachedEmbedder


def build_service_namespace(store: NamespaceStore, embedder: CachedEmbedder) -> None:
    """One namespace with what every mode reads: the local-search test's graph, the columns global
    search reads, community reports and the chunk graph."""
    build_tiny_index(store, embedder)
    units = store.read_table(schema.TEXT_UNITS, columns=["id"]).column("id").to_pylist()
    # The hand-built graph lacks the columns global search reads; add them.
    store.write_table(schema.COMMUNITIES, communities_table(leaf_units=units[:2]))
    levels = {c: lv for c, lv, *_ in COMMUNITIES}
    store.write_table(
        schema.COMMUNITY_REPORTS,
        pa.Table.from_pylist(
            [
                {
                    "community": c,
                    "level": levels[c],
                    "title": t,
                    "summary": s,
                    "full_content": s,
                    "rank": 1.0,
                }
                for c, (t, s) in tiny_index.REPORTS.items()  # read here: a test may swap the reports
            ],
            schema=schema.COMMUNITY_REPORTS_SCHEMA,
        ),
    )
    build_namespace_chunk_graph(store)


def build_service_data(root: Path) -> ServiceData:
    """Two indexed namespaces (with what global search and the chunk graph need) and a keys file."""
    embedder = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(root / "cache.sqlite"))
    storage = root / "storage"
    for ns in ("acme", "globex"):
        build_service_namespace(NamespaceStore(storage, ns), embedder)
    keys_file = root / "keys.yaml"
    digest = {"acme": hash_key(KEY_A), "globex": hash_key(KEY_B)}
    keys_file.write_text(
        "tenants:\n"
        + "".join(
            f"  {t}:\n    key_sha256: {digest[t]}\n    namespaces: [{', '.join(ns)}]\n"
            for t, ns in TENANTS.items()
        )
    )
    return ServiceData(storage, keys_file, embedder)


@contextlib.contextmanager
def serving(service: QueryService) -> Iterator[str]:
    """The app under uvicorn on a free 127.0.0.1 port, in a thread; yields the base URL."""
    port = free_port()
    config = server_config(
        create_app(service), service.settings, host="127.0.0.1", port=port, log_config=None, access_log=True
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def offline_settings(data: ServiceData, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "storage_root": data.storage_root,
        "api_keys_file": data.keys_file,
        "service_key_concurrency": 2,
        "service_max_body_bytes": 4096,
        "service_max_evidence_items": 3,
        # A test that is not about deadlines must not meet one on a loaded machine (a cold model
        # load alone can take half a minute there); the deadline tests set their own.
        "service_timeout_s": 110.0,
    }
    return Settings(**{**values, **overrides})


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


BODIES = {
    "global": {"namespace": "acme", "question": "What is Scrooge's business world like?"},
    "local": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?"},
    "drift": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "depth": 1},
    "basic": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "top_k": 2},
    "lazy": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "budget": 6},
    "auto": {"namespace": "acme", "question": "Summarize the story as a whole."},
    "chunks": {"namespace": "acme", "query": "Who is Marley?", "top_k": 2},
    "vector": {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 2},
}
