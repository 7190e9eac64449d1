"""A namespace's text units as a tool store of the configured kind: LanceDB where the pipeline wrote
them, or pgvector / Chroma kept in step with LanceDB by ``sync_text_units``.

pgvector uses the server of ``PIPELINE_PGVECTOR_DSN`` with one schema per namespace (named as the
namespace); Chroma lives under ``<storage_root>/<namespace>/chroma``. A copy is refreshed only when the
namespace's LanceDB table has a new version (a marker file beside the namespace's data records the
version each copy holds).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pipeline.schema import LANCE_TEXT_UNITS
from pipeline.settings import ConfigError, Settings
from pipeline.store import NamespaceStore
from pipeline.vector_tool.stores.chroma import ChromaStore
from pipeline.vector_tool.stores.lancedb import LanceDBStore
from pipeline.vector_tool.stores.pgvector import PgVectorStore
from pipeline.vector_tool.stores.sync import sync_text_units

StoreKind = Literal["lancedb", "pgvector", "chroma"]


def namespace_store(settings: Settings, namespace: str, kind: StoreKind = "lancedb") -> Any:
    """The store holding the namespace's ``text_units`` (synced from LanceDB when it is not LanceDB)."""
    ns = NamespaceStore(settings.storage_root, namespace)
    lance = LanceDBStore(ns)
    if kind == "lancedb":
        return lance
    if kind == "pgvector":
        if not settings.pgvector_dsn:
            raise ConfigError("--store pgvector needs PIPELINE_PGVECTOR_DSN (a PostgreSQL URI with pgvector)")
        target: Any = PgVectorStore(settings.pgvector_dsn, schema=namespace)
    elif kind == "chroma":
        target = ChromaStore(ns.root / "chroma")
    else:
        raise ConfigError(f"unknown store {kind!r}; use lancedb, pgvector or chroma")
    version = lance.index_fingerprint(LANCE_TEXT_UNITS)  # raises TableNotFoundError before any sync
    marker = ns.root / f".synced-{kind}-{hashlib.sha256(target.identity.encode()).hexdigest()[:12]}.json"
    if not marker.is_file() or json.loads(marker.read_text()).get("version") != version:
        rows = sync_text_units(target, ns)
        marker.write_text(json.dumps({"version": version, "rows": rows, "target": target.identity}))
    return target
