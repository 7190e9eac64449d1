"""A namespace's documents as a person sees them: each file the index read, with its status.

`indexed`: the document is in the committed index (its `documents` row); `failed`: the ingest refused the
whole file (its `ingest_errors` row), with the reason the parse named (`encrypted`, `too_many_pages`,
`parse_timeout`, ...). Both come from the index's own tables, never guessed. The other statuses of the
documents API (`queued`, `parsing`, `deleted`) belong to uploads through the service, which are not built
yet; a document a run has not read is not listed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Any

import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.service.browse import NotFound

STATUSES = ("queued", "parsing", "indexed", "failed", "deleted")


def _pages(layout: str | None) -> int | None:
    """The page count of a paged file (PDF): its layout's pages; None for a file without pages."""
    if not layout:
        return None
    pages = json.loads(layout).get("pages") or []
    return len(pages) or None


def _indexed(store: NamespaceStore) -> list[dict[str, Any]]:
    if not store.has_table(schema.DOCUMENTS):
        return []
    columns = ["id", "title", "n_bytes", "metadata", "layout"]
    out = []
    for row in store.read_table(schema.DOCUMENTS, columns=columns).to_pylist():
        metadata = json.loads(row["metadata"] or "{}")
        out.append(
            {
                "id": row["id"],
                "name": row["title"],
                "type": metadata.get("format"),
                "size": row["n_bytes"],
                "pages": _pages(row["layout"]),
                "content_hash": row["id"],  # sha256 of the document's text: its identity across runs
                "status": "indexed",
                "reason": None,
            }
        )
    return out


def _failed(store: NamespaceStore) -> list[dict[str, Any]]:
    """Whole files the ingest refused (a row of a CSV or JSON file that failed is not a document)."""
    if not store.has_table(schema.INGEST_ERRORS):
        return []
    out: dict[str, dict[str, Any]] = {}
    for row in store.read_table(schema.INGEST_ERRORS).to_pylist():
        if row["row"] is not None:
            continue
        name = PurePosixPath(str(row["source_path"]).replace("\\", "/")).name
        # No text, so no text hash: the id is the file's place in the input, stable across runs
        key = hashlib.sha256(str(row["source_path"]).encode("utf-8")).hexdigest()
        out[key] = {
            "id": f"failed-{key[:16]}",
            "name": name,
            "type": PurePosixPath(name).suffix.lstrip(".").lower() or None,
            "size": None,
            "pages": None,
            "content_hash": None,
            "status": "failed",
            "reason": row["error_type"],
            "detail": row["reason"],
        }
    return list(out.values())


def document_list(store: NamespaceStore) -> dict[str, Any]:
    """The namespace's documents in its committed index, by name (indexed ones and refused files), and
    the index version they are listed from (null: none committed yet)."""
    if not store.exists():
        return {"namespace": store.namespace, "index_version": None, "documents": []}
    pinned = store.pinned()
    found = sorted(_indexed(pinned) + _failed(pinned), key=lambda d: (str(d["name"]).lower(), d["id"]))
    version = pinned.manifest.version if pinned.manifest is not None else None
    return {"namespace": store.namespace, "index_version": version, "documents": found}


def document_chunks(store: NamespaceStore, document_id: str) -> dict[str, Any]:
    """Document `document_id`'s text units in the committed index, in order: each one's place (characters,
    pages, section), its tokens, its text and the entities extracted from it (NotFound: no such
    document)."""
    pinned = store.pinned() if store.exists() else store
    if not pinned.has_table(schema.DOCUMENTS):
        raise NotFound(f"no document {document_id!r} in namespace {store.namespace!r}")
    docs = pinned.read_table(schema.DOCUMENTS, columns=["id", "title"])
    docs = docs.filter(pc.equal(docs.column("id"), document_id))
    if docs.num_rows == 0:
        raise NotFound(f"no document {document_id!r} in namespace {store.namespace!r}")
    columns = ["id", "chunk_index", "start_char", "end_char", "page_start", "page_end", "section"]
    units = pinned.read_table(
        schema.TEXT_UNITS, columns=[*columns, "n_tokens", "text", "entity_ids", "document_id"]
    )
    units = units.filter(pc.equal(units.column("document_id"), document_id))
    titles: dict[str, str] = {}
    if pinned.has_table(schema.ENTITIES):
        entities = pinned.read_table(schema.ENTITIES, columns=["id", "title"])
        titles = dict(
            zip(entities.column("id").to_pylist(), entities.column("title").to_pylist(), strict=True)
        )
    chunks = [
        {
            **{c: row[c] for c in columns},
            "tokens": row["n_tokens"],
            "text": row["text"],
            "entities": sorted({titles[e] for e in row["entity_ids"] or [] if e in titles}),
        }
        for row in sorted(units.to_pylist(), key=lambda r: (r["chunk_index"] or 0, r["start_char"] or 0))
    ]
    doc = docs.to_pylist()[0]
    return {
        "namespace": store.namespace,
        "document": {"id": doc["id"], "name": doc["title"]},
        "chunks": chunks,
    }
