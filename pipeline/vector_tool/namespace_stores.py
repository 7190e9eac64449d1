"""A namespace's text units as a tool store of the configured kind: LanceDB where the pipeline wrote
them, or pgvector / Chroma kept in step with LanceDB by ``sync_text_units``.

pgvector uses the server of ``PIPELINE_PGVECTOR_DSN`` with one schema per namespace (named as the
namespace); Chroma lives under ``<storage_root>/<namespace>/chroma``, or under a local folder when the
storage root is remote (see `chroma_dir`). A copy is refreshed only when the namespace's LanceDB table has
a new version (a marker file beside the copy's data records the version each copy holds).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any, Literal

from pipeline.core.schema import LANCE_TEXT_UNITS
from pipeline.io.store import NamespaceStore
from pipeline.settings import ConfigError, Settings
from pipeline.vector_tool.stores.chroma import ChromaStore
from pipeline.vector_tool.stores.lancedb import LanceDBStore
from pipeline.vector_tool.stores.pgvector import PgVectorStore
from pipeline.vector_tool.stores.sync import sync_text_units

StoreKind = Literal["lancedb", "pgvector", "chroma"]


def chroma_dir(ns: NamespaceStore) -> Path:
    """The local folder holding the namespace's Chroma copy and its sync marker.

    Embedded Chroma writes SQLite and its index files through the local filesystem, so on an s3:// root
    the copy goes to the machine's temp folder instead (one folder per storage root and namespace). It is
    a cache of LanceDB: a machine without it, or whose temp folder was cleared, syncs it again."""
    if ns.storage.is_local:
        return Path(ns.root)
    digest = hashlib.sha256(ns.storage.uri().encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "pipeline-chroma" / digest / ns.namespace


def namespace_store(settings: Settings, namespace: str, kind: StoreKind = "lancedb") -> Any:
    """The store holding the namespace's ``text_units`` (synced from LanceDB when it is not LanceDB)."""
    ns = NamespaceStore.from_settings(settings, namespace).pinned()  # the committed index version
    lance = LanceDBStore(ns)
    if kind == "lancedb":
        return lance
    local: Path | None = None  # where the copy and its marker live when the copy is a local folder
    if kind == "pgvector":
        if not settings.pgvector_dsn:
            raise ConfigError("--store pgvector needs PIPELINE_PGVECTOR_DSN (a PostgreSQL URI with pgvector)")
        target: Any = PgVectorStore(settings.pgvector_dsn, schema=namespace)
    elif kind == "chroma":
        local = chroma_dir(ns)
        target = ChromaStore(local / "chroma")
    else:
        raise ConfigError(f"unknown store {kind!r}; use lancedb, pgvector or chroma")
    version = lance.index_fingerprint(LANCE_TEXT_UNITS)  # raises TableNotFoundError before any sync
    marker = f".synced-{kind}-{hashlib.sha256(target.identity.encode()).hexdigest()[:12]}.json"
    if _synced_version(ns, local, marker) != version:
        rows = sync_text_units(target, ns)
        payload = json.dumps({"version": version, "rows": rows, "target": target.identity}).encode()
        if local is None:
            ns.write_bytes(marker, payload)
        else:
            local.mkdir(parents=True, exist_ok=True)
            (local / marker).write_bytes(payload)
    return target


def _synced_version(ns: NamespaceStore, local: Path | None, marker: str) -> Any:
    if local is None:
        return json.loads(ns.read_bytes(marker)).get("version") if ns.has_file(marker) else None
    path = local / marker
    return json.loads(path.read_text()).get("version") if path.is_file() else None
