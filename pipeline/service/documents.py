"""A namespace's documents as a person sees them: each file, with its status.

A document is a file of the namespace's input (the unit a person uploads, replaces and deletes); its id
is its place in the input folder (`uploads.changes.file_id`), stable across replacements and known
before its text is. The index's own document id, the sha256 of the text, is its `content_hash` (a CSV or
JSON file of rows holds several such documents: `index_ids`).

Statuses, each read from a record where it is true, never guessed:
- `indexed`: in the committed index (its `documents` rows);
- `failed`: the ingest refused the whole file (its `ingest_errors` row, with the reason the parse named:
  `encrypted`, `too_many_pages`, `parse_timeout`, ...), or the run that was to take the file's last
  change in failed (`run_killed`, `run_crashed`, `run_interrupted`, `run_failed`): retryable;
- `queued`: a change waits for its run, or a file of the input no run has read yet;
- `parsing`: the run taking its last change in is in flight;
- `deleted`: deleted through the API (removed from the index once its run has succeeded).
The last three and the run-failure reasons come from the service's change log and run records
(`pipeline.service.uploads`); a namespace indexed from an operator's folder has only the first two.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.service.browse import NotFound
from pipeline.service.uploads.changes import file_id

STATUSES = ("queued", "parsing", "indexed", "failed", "deleted")


def _pages(layout: str | None) -> int | None:
    """The page count of a paged file (PDF): its layout's pages; None for a file without pages."""
    if not layout:
        return None
    pages = json.loads(layout).get("pages") or []
    return len(pages) or None


def _kind(name: str) -> str | None:
    return PurePosixPath(name).suffix.lstrip(".").lower() or None


def _entry(name: str, **fields: Any) -> dict[str, Any]:
    base = {
        "id": file_id(name),
        "name": name,
        "type": _kind(name),
        "size": None,
        "pages": None,
        "content_hash": None,
        "status": "queued",
        "reason": None,
        "run": None,
    }
    return {**base, **fields}


def indexed_files(store: NamespaceStore) -> dict[str, dict[str, Any]]:
    """The committed index's files by their place in the input: the indexed ones and those the ingest
    refused whole (a row of a CSV or JSON file that failed is not a document)."""
    out: dict[str, dict[str, Any]] = {}
    if store.has_table(schema.DOCUMENTS):
        columns = ["id", "title", "n_bytes", "metadata", "layout", "source_path"]
        for row in store.read_table(schema.DOCUMENTS, columns=columns).to_pylist():
            name = str(row["source_path"] or row["title"])
            metadata = json.loads(row["metadata"] or "{}")
            found = out.get(name)
            if found is not None:  # a file of rows: several documents
                found["index_ids"].append(row["id"])
                found["content_hash"] = None
                continue
            out[name] = _entry(
                name,
                title=row["title"],
                type=metadata.get("format") or _kind(name),
                size=row["n_bytes"],
                pages=_pages(row["layout"]),
                content_hash=row["id"],  # sha256 of the document's text: its identity in the index
                index_ids=[row["id"]],
                status="indexed",
            )
    if store.has_table(schema.INGEST_ERRORS):
        for row in store.read_table(schema.INGEST_ERRORS).to_pylist():
            name = str(row["source_path"])
            if row["row"] is not None or name in out:
                continue
            out[name] = _entry(
                name, index_ids=[], status="failed", reason=row["error_type"], detail=row["reason"]
            )
    return out


def document_list(store: NamespaceStore, uploads: Any = None) -> dict[str, Any]:
    """The namespace's documents by name with their status, and the index version they are read from
    (null: none committed yet). `uploads` (`uploads.status.UploadState`) adds what the service's change
    log and runs know: queued, parsing, deleted and failed runs."""
    pinned = store.pinned() if store.exists() else None
    files = indexed_files(pinned) if pinned is not None else {}
    if uploads is not None:
        files = uploads.merge(files)
    found = sorted(files.values(), key=lambda d: (str(d["name"]).lower(), d["id"]))
    version = pinned.manifest.version if pinned is not None and pinned.manifest is not None else None
    return {"namespace": store.namespace, "index_version": version, "documents": found}


def _index_id(pinned: NamespaceStore, document_id: str) -> str | None:
    """The index's document id for `document_id`, which is either that id or a file's id (one document)."""
    docs = pinned.read_table(schema.DOCUMENTS, columns=["id", "source_path"])
    ids = docs.column("id").to_pylist()
    if document_id in ids:
        return document_id
    for index_id, source in zip(ids, docs.column("source_path").to_pylist(), strict=True):
        if source is not None and file_id(source) == document_id:
            return index_id
    return None


def document_chunks(store: NamespaceStore, document_id: str) -> dict[str, Any]:
    """Document `document_id`'s text units in the committed index, in order: each one's place (characters,
    pages, section), its tokens, its text and the entities extracted from it (NotFound: no such
    document)."""
    pinned = store.pinned() if store.exists() else store
    found = _index_id(pinned, document_id) if pinned.has_table(schema.DOCUMENTS) else None
    if found is None:
        raise NotFound(f"no document {document_id!r} in namespace {store.namespace!r}")
    document_id = found
    docs = pinned.read_table(schema.DOCUMENTS, columns=["id", "title"])
    docs = docs.filter(pc.equal(docs.column("id"), document_id))
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
