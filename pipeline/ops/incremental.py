"""Incremental re-indexing: what changed since the last run, and which earlier work can be kept.

Every stage of the index is recomputed from the full current tables (so a deleted document leaves
nothing behind and Leiden always sees the whole graph); what makes a re-index cheap is that each
costly step reuses earlier work keyed by content:

- documents are identified by the sha256 of their text and text units by (document id, offsets), so an
  unchanged document yields the same text-unit ids;
- an engine whose extraction is reusable (the offline rules) takes an unchanged text unit's records from
  the previous `extracted_graph` table (`reuse_extractions`, under the engine's extraction config); the
  LLM engine asks again and its cache, keyed by the full request, answers;
- embeddings come from the embedding cache (keyed by text), reports are reused by fingerprint.

This module also watches the input root for the sensor (`input_fingerprints`, `diff_inputs`): one
fingerprint per namespace folder, cheap enough to compute every tick (file names, sizes, mtimes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core.boilerplate import Region
from pipeline.core.namespace import InvalidNamespaceError, validate_namespace
from pipeline.core.schema import EXTRACTED_GRAPH_SCHEMA
from pipeline.core.stored_regions import REGIONS_KEY, regions_metadata, stored_regions
from pipeline.ops.extraction import from_table
from pipeline.ops.extraction import to_table as extraction_table
from pipeline.ops.input_folder import folder_fingerprint  # what ingest reads, nothing outside it

# Parquet schema metadata key holding the configuration an `extracted_graph` table was made with.
EXTRACTION_CONFIG_KEY = b"extraction_config"
# ... and the chunking a base_text_units table was cut with, with each document's boilerplate count
# and its front-matter regions (`pipeline.core.stored_regions`).
CHUNKING_CONFIG_KEY = b"chunking_config"
BOILERPLATE_KEY = b"boilerplate_chars"


# ---- the input root (sensor) -------------------------------------------------------------------
def namespace_folders(input_root: Path) -> dict[str, Path]:
    """Sub-folders of the input root whose names are valid namespaces (others are ignored)."""
    if not input_root.is_dir():
        return {}
    out = {}
    for child in sorted(input_root.iterdir()):
        if not child.is_dir():
            continue
        try:
            out[validate_namespace(child.name)] = child
        except InvalidNamespaceError:
            continue
    return out


def input_fingerprints(input_root: Path) -> dict[str, str]:
    return {ns: folder_fingerprint(folder) for ns, folder in namespace_folders(input_root).items()}


@dataclass(frozen=True)
class InputChanges:
    new: list[str]  # folders not seen before: a new partition and a run
    changed: list[str]  # files added, edited or deleted: a run
    removed: list[str]  # folders that disappeared: nothing is run (the index is kept until deleted)

    @property
    def to_index(self) -> list[str]:
        return sorted(self.new + self.changed)


def diff_inputs(previous: Mapping[str, str], current: Mapping[str, str]) -> InputChanges:
    return InputChanges(
        new=sorted(set(current) - set(previous)),
        changed=sorted(ns for ns in current if ns in previous and previous[ns] != current[ns]),
        removed=sorted(set(previous) - set(current)),
    )


def all_namespaces(input_root: Path, registered: Iterable[str]) -> list[str]:
    """Every namespace a backfill covers: each folder under the input root and each registered one."""
    return sorted(set(namespace_folders(input_root)) | set(registered))


# ---- documents and text units --------------------------------------------------------------------
@dataclass
class DocumentDelta:
    added: int = 0  # a source with no earlier document
    changed: int = 0  # same source, new text (so a new id)
    removed: int = 0  # a document whose source is gone
    unchanged: int = 0

    def as_metadata(self) -> dict[str, int]:
        return {
            "documents_added": self.added,
            "documents_changed": self.changed,
            "documents_removed": self.removed,
            "documents_unchanged": self.unchanged,
        }


def _doc_keys(table: pa.Table) -> dict[str, str]:
    """id -> source key (source_path, or the title for rows without one)."""
    cols = table.column_names
    ids = table.column("id").to_pylist()
    paths = table.column("source_path").to_pylist() if "source_path" in cols else [None] * len(ids)
    titles = table.column("title").to_pylist() if "title" in cols else [None] * len(ids)
    return {i: f"{p or ''}\0{t or ''}" for i, p, t in zip(ids, paths, titles, strict=True)}


def diff_documents(previous: pa.Table | None, current: pa.Table) -> DocumentDelta:
    """Compare by content-hash id; an id that changed under the same source counts as an edit."""
    now = _doc_keys(current)
    before = _doc_keys(previous) if previous is not None else {}
    delta = DocumentDelta()
    gone = {i: k for i, k in before.items() if i not in now}
    gone_sources = set(gone.values())
    matched_sources: set[str] = set()
    for doc_id, key in now.items():
        if doc_id in before:
            delta.unchanged += 1
        elif key in gone_sources and key not in matched_sources:
            delta.changed += 1
            matched_sources.add(key)
        else:
            delta.added += 1
    delta.removed = sum(1 for k in gone.values() if k not in matched_sources)
    return delta


def unit_delta(previous_ids: Iterable[str], current_ids: Iterable[str]) -> dict[str, int]:
    before, now = set(previous_ids), set(current_ids)
    return {
        "text_units_new": len(now - before),
        "text_units_removed": len(before - now),
        "text_units_unchanged": len(now & before),
    }


# ---- chunk reuse ---------------------------------------------------------------------------------
def tag_chunking(
    table: pa.Table, config: str, outside: Mapping[str, int], regions: Mapping[str, tuple[Region, ...]]
) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    meta[CHUNKING_CONFIG_KEY] = config.encode()
    meta[BOILERPLATE_KEY] = json.dumps(dict(outside), sort_keys=True).encode()
    meta[REGIONS_KEY] = regions_metadata(regions)
    return table.replace_schema_metadata(meta)


def reusable_chunks(
    previous: pa.Table | None, config: str, document_ids: set[str]
) -> tuple[dict[str, list[dict]], dict[str, int], dict[str, tuple[Region, ...]]]:
    """({document id: its previous base_text_units rows in chunk order}, {document id: boilerplate
    characters}, {document id: front-matter regions}) for the wanted documents, when `previous` was cut
    under `config`; empty otherwise. A document's id is its text's sha256, so the same id means the
    same text."""
    meta = (previous.schema.metadata or {}) if previous is not None else {}
    regions = stored_regions(meta)
    if (
        previous is None
        or meta.get(CHUNKING_CONFIG_KEY) != config.encode()
        or BOILERPLATE_KEY not in meta
        or regions is None  # cut before the regions were stored: chunked again once, to store them
    ):
        return {}, {}, {}
    by_doc: dict[str, list[dict]] = {}
    for row in previous.to_pylist():
        if row["document_id"] in document_ids:
            by_doc.setdefault(row["document_id"], []).append(row)
    for rows in by_doc.values():
        rows.sort(key=lambda r: r["chunk_index"])
    outside = {k: v for k, v in json.loads(meta[BOILERPLATE_KEY]).items() if k in by_doc}
    return by_doc, outside, {k: v for k, v in regions.items() if k in by_doc}


# ---- extraction reuse ------------------------------------------------------------------------------
def tag_extraction_config(table: pa.Table, config: str) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    meta[EXTRACTION_CONFIG_KEY] = config.encode()
    return table.replace_schema_metadata(meta)


def reuse_extractions(previous: pa.Table | None, config: str, unit_ids: Iterable[str]) -> pa.Table | None:
    """The rows of the previous offline extractions of the wanted text units, when the same configuration
    made them (None: nothing to reuse), in the `extracted_graph` schema.

    A text unit's id hashes its document's content hash and its offsets, so the same id means the same
    text; only "ok" rows are kept (the offline extractor never fails, but be strict). The rows stay Arrow:
    decoding and encoding again the whole graph's records was most of a 1% re-index's extraction stage."""
    if previous is None or (previous.schema.metadata or {}).get(EXTRACTION_CONFIG_KEY) != config.encode():
        return None
    wanted = pa.array(list(unit_ids), pa.string())
    keep = pc.and_(
        pc.is_in(previous.column("text_unit_id"), value_set=wanted),
        pc.and_(pc.equal(previous.column("method"), "offline"), pc.equal(previous.column("status"), "ok")),
    )
    rows = previous.filter(pc.fill_null(keep, False))
    if rows.num_rows == 0:
        return None
    if not rows.schema.equals(EXTRACTED_GRAPH_SCHEMA, check_metadata=False):
        # Written before a column or a record field was added: decoding fills in the defaults.
        return extraction_table(from_table(rows))
    return rows.replace_schema_metadata(EXTRACTED_GRAPH_SCHEMA.metadata)
