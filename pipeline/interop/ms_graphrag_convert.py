"""Microsoft GraphRAG's tables as ours: the columns it lacks filled in, no model called.

Rules, in order:
1. Documents take our id (sha256 of the text), so a later re-index of the same files sees them
   unchanged; GraphRAG's id is kept in `metadata`.
2. A text unit's offsets are found by locating its text in its document, searching forward from the
   previous unit's start (units overlap), then anywhere; a unit whose text GraphRAG's token chunker cut
   inside a character (a U+FFFD at an edge) is located without it, and its text becomes the document's.
   A unit found nowhere keeps null offsets and is counted, never dropped. A located unit takes our id
   (document id and offsets); the others keep theirs, and every table's references follow.
3. Entities keep their ids; `aliases` are empty (GraphRAG merges no name forms), `name_key` is our
   normalised title, `document_ids` come from their text units. Relationships get `source_id` and
   `target_id` from their endpoint titles; one whose endpoint is no entity is left out and counted.
4. Claims keep GraphRAG's values ("NONE" included) and gain entity ids, the document and the offsets of
   their source text.
5. Communities keep their numbers, levels and members; `text_unit_ids` become those of the members, as
   ours are. Reports are kept as written (`method` says so), id = their community's, with the
   fingerprint our report step would compute for that community under the configured engine, so a
   later reports run over an unchanged graph reuses them; their `[Data: ...]` ids (GraphRAG's
   human-readable ids) are resolved into `data_refs`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.core.names import normalize_name
from pipeline.interop.ms_graphrag_reports import imported_reports
from pipeline.ops.chunking import text_unit_id
from pipeline.ops.ingest import document_id
from pipeline.ops.reports.models import ReportIdentity

REPLACEMENT = "\ufffd"


@dataclass
class ConvertStats:
    units_located: int = 0
    units_trimmed: int = 0  # located once a cut character at an edge was dropped
    units_not_found: int = 0  # null offsets
    unlocated_unit_ids: list[str] = field(default_factory=list)
    duplicate_unit_ids: int = 0
    relationships_dropped: int = 0  # an endpoint title that is no entity
    entities_without_community: int = 0
    claims_located: int = 0


@dataclass
class Converted:
    tables: dict[str, pa.Table]
    stats: ConvertStats


def _list(value: Any) -> list[Any]:
    return [] if value is None else list(value)


def locate(text: str, doc: str, after: int) -> tuple[int, int, str] | None:
    """(start, end, text as found) of a unit's text in its document, searching from `after` first."""
    for candidate in dict.fromkeys((text, text.strip(REPLACEMENT))):
        if not candidate:
            continue
        start = doc.find(candidate, after)
        if start < 0:
            start = doc.find(candidate)
        if start >= 0:
            return start, start + len(candidate), candidate
    return None


def _documents(rows: list[dict[str, Any]], folder: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    out, ours = [], {}
    for i, d in enumerate(rows):
        text = d.get("text") or ""
        ours[d["id"]] = document_id(text)
        raw = d.get("raw_data")
        out.append(
            {
                "id": ours[d["id"]],
                "human_readable_id": d.get("human_readable_id", i),
                "title": d.get("title") or d["id"],
                "text": text,
                "text_unit_ids": [],
                "creation_date": d.get("creation_date"),
                "raw_data": json.dumps(raw, sort_keys=True, default=str) if raw is not None else None,
                "source_path": d.get("title"),
                "n_bytes": len(text.encode("utf-8")),
                "metadata": json.dumps(
                    {"format": "graphrag", "graphrag_id": d["id"], "imported_from": folder}, sort_keys=True
                ),
                "layout": None,
            }
        )
    return out, ours


def _text_units(
    rows: list[dict[str, Any]], docs: dict[str, dict[str, Any]], doc_ids: dict[str, str], stats: ConvertStats
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Our text-unit rows (links filled later) and their id -> ours."""
    cursor: dict[str, int] = defaultdict(int)
    chunk_index: dict[str, int] = defaultdict(int)
    renamed: dict[str, str] = {}
    out = []
    for u in rows:
        their_doc = u.get("document_id")
        if their_doc is None:
            their_doc = next(iter(_list(u.get("document_ids"))), None)  # 2.x
        doc_id = doc_ids.get(their_doc, their_doc)
        text = u.get("text") or ""
        found = locate(text, docs[doc_id]["text"], cursor[doc_id]) if doc_id in docs else None
        if found is None:
            start = end = None
            new_id = u["id"]
            stats.units_not_found += 1
            stats.unlocated_unit_ids.append(u["id"])
        else:
            start, end, located = found
            stats.units_trimmed += located != text
            text = located
            cursor[doc_id] = start + 1
            new_id = text_unit_id(doc_id, start, end)
            stats.units_located += 1
        if u["id"] in renamed:
            stats.duplicate_unit_ids += 1  # GraphRAG hashes the text alone: the same chunk in two documents
        renamed.setdefault(u["id"], new_id)
        out.append(
            {
                "id": new_id,
                "human_readable_id": u.get("human_readable_id", len(out)),
                "text": text,
                "n_tokens": u.get("n_tokens"),
                "document_id": doc_id,
                "entity_ids": [],
                "relationship_ids": [],
                "covariate_ids": [],
                "start_char": start,
                "end_char": end,
                "chunk_index": chunk_index[doc_id],
                "page_start": None,  # GraphRAG keeps no layout
                "page_end": None,
                "section": None,
            }
        )
        chunk_index[doc_id] += 1
    return out, renamed


def _units_of(ids: Any, renamed: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(renamed.get(i, i) for i in _list(ids)))


def convert(
    output: Any,  # ms_graphrag_read.GraphRAGOutput
    identity: ReportIdentity,
    *,
    budget: int,
    max_words: int,
    encoding: str,
    parent_budget: int | None = None,
) -> Converted:
    """Every table of `output` in our schemas (module docstring)."""
    stats = ConvertStats()
    documents, doc_ids = _documents(output.table("documents"), str(output.folder))
    by_doc = {d["id"]: d for d in documents}
    units, renamed = _text_units(output.table("text_units"), by_doc, doc_ids, stats)
    unit_doc = {u["id"]: u["document_id"] for u in units}

    entities, id_of_title = [], {}
    for i, e in enumerate(output.table("entities")):
        unit_ids = _units_of(e.get("text_unit_ids"), renamed)
        id_of_title.setdefault(e["title"], e["id"])
        entities.append(
            {
                "id": e["id"],
                "human_readable_id": e.get("human_readable_id", i),
                "title": e["title"],
                "type": e.get("type") or "",
                "description": e.get("description") or "",
                "text_unit_ids": unit_ids,
                "frequency": e.get("frequency") if e.get("frequency") is not None else len(unit_ids),
                "degree": e.get("degree") or 0,
                "aliases": [],
                "document_ids": sorted({unit_doc[u] for u in unit_ids if u in unit_doc}),
                "name_key": normalize_name(e["title"]),
            }
        )
    folded = {normalize_name(t): i for t, i in id_of_title.items()}

    def entity_of(title: Any) -> str | None:
        if title is None:
            return None
        return id_of_title.get(title) or folded.get(normalize_name(str(title)))

    relationships = []
    for i, r in enumerate(output.table("relationships")):
        source, target = entity_of(r["source"]), entity_of(r["target"])
        if source is None or target is None:
            stats.relationships_dropped += 1
            continue
        unit_ids = _units_of(r.get("text_unit_ids"), renamed)
        relationships.append(
            {
                "id": r.get("id") or f"{source}-{target}",
                "human_readable_id": r.get("human_readable_id", i),
                "source": r["source"],
                "target": r["target"],
                "description": r.get("description") or "",
                "weight": float(r["weight"]) if r.get("weight") is not None else 1.0,
                "combined_degree": r.get("combined_degree") or 0,
                "text_unit_ids": unit_ids,
                "source_id": source,
                "target_id": target,
                "document_ids": sorted({unit_doc[u] for u in unit_ids if u in unit_doc}),
                "npmi": None,
            }
        )

    covariates = []
    for i, c in enumerate(output.table("covariates")):
        unit = renamed.get(c["text_unit_id"], c["text_unit_id"])
        doc = unit_doc.get(unit)
        source_text = c.get("source_text") or ""
        start = by_doc[doc]["text"].find(source_text) if doc in by_doc and source_text else -1
        stats.claims_located += start >= 0
        covariates.append(
            {
                "id": c.get("id") or f"claim-{i}",
                "human_readable_id": c.get("human_readable_id", i),
                "covariate_type": c.get("covariate_type") or "claim",
                "type": c.get("type"),
                "description": c.get("description"),
                "subject_id": c["subject_id"],
                "object_id": c.get("object_id"),
                "status": c.get("status"),
                "start_date": c.get("start_date"),
                "end_date": c.get("end_date"),
                "source_text": source_text or None,
                "text_unit_id": unit,
                "subject_entity_id": entity_of(c["subject_id"]),
                "object_entity_id": entity_of(c.get("object_id")),
                "document_id": doc,
                "start_char": start if start >= 0 else None,
                "end_char": start + len(source_text) if start >= 0 else None,
                "round": 0,
            }
        )

    _link_units(units, entities, relationships, covariates)
    for d in documents:
        d["text_unit_ids"] = [u["id"] for u in units if u["document_id"] == d["id"]]

    communities = _communities(output.table("communities"), entities, relationships, stats)
    converted = {
        schema.DOCUMENTS: tables.to_table(documents, schema.DOCUMENTS_SCHEMA),
        schema.INGEST_ERRORS: tables.to_table([], schema.INGEST_ERRORS_SCHEMA),
        schema.TEXT_UNITS: tables.to_table(units, schema.TEXT_UNITS_SCHEMA),
        schema.ENTITIES: tables.to_table(entities, schema.ENTITIES_SCHEMA),
        schema.RELATIONSHIPS: tables.to_table(relationships, schema.RELATIONSHIPS_SCHEMA),
        schema.COVARIATES: tables.to_table(covariates, schema.COVARIATES_SCHEMA),
        schema.COMMUNITIES: tables.to_table(communities, schema.COMMUNITIES_SCHEMA),
        schema.FAILED_REPORTS: tables.to_table([], schema.FAILED_REPORTS_SCHEMA),
    }
    converted[schema.COMMUNITY_REPORTS] = imported_reports(
        output.table("community_reports"),
        converted,
        identity,
        refs={
            "Entities": {e["human_readable_id"]: e["id"] for e in entities},
            "Relationships": {r["human_readable_id"]: r["id"] for r in relationships},
            "Claims": {c["human_readable_id"]: c["id"] for c in covariates},
        },
        budget=budget,
        max_words=max_words,
        encoding=encoding,
        parent_budget=parent_budget,
    )
    return Converted(converted, stats)


def _link_units(
    units: list[dict], entities: list[dict], relationships: list[dict], covariates: list[dict]
) -> None:
    """Text units' entity, relationship and claim ids, as reverse maps (GraphRAG's rule, and ours)."""
    by_id = {u["id"]: u for u in units}
    for column, rows in (("entity_ids", entities), ("relationship_ids", relationships)):
        for row in rows:
            for unit in row["text_unit_ids"]:
                if unit in by_id:
                    by_id[unit][column].append(row["id"])
    for c in covariates:
        if c["text_unit_id"] in by_id:
            by_id[c["text_unit_id"]]["covariate_ids"].append(c["id"])


def _communities(
    rows: list[dict[str, Any]], entities: list[dict], relationships: list[dict], stats: ConvertStats
) -> list[dict[str, Any]]:
    units_of = {e["id"]: e["text_unit_ids"] for e in entities}
    known_edges = {r["id"] for r in relationships}
    endpoints = {r["id"]: (r["source_id"], r["target_id"]) for r in relationships}
    children: dict[int, list[int]] = defaultdict(list)
    for c in rows:
        parent = c.get("parent")
        if parent is not None and parent >= 0:
            children[parent].append(c["community"])
    out, placed = [], set()
    for c in sorted(rows, key=lambda c: (c["level"], c["community"])):
        members = [e for e in _list(c["entity_ids"]) if e in units_of]
        inside = set(members)
        placed |= inside
        edges = c.get("relationship_ids")
        if edges is None:  # not written by this version: the edges with both ends inside, as GraphRAG's
            edges = [r for r, (s, t) in endpoints.items() if s in inside and t in inside]
        out.append(
            {
                "id": c.get("id") or f"community-{c['community']}",
                "human_readable_id": c.get("human_readable_id", c["community"]),
                "community": c["community"],
                "level": c["level"],
                "parent": c.get("parent") if c.get("parent") is not None else -1,
                "children": sorted(_list(c.get("children")) or children.get(c["community"], [])),
                "title": c.get("title") or f"Community {c['community']}",
                "entity_ids": members,
                "relationship_ids": [r for r in _list(edges) if r in known_edges],
                "text_unit_ids": list(dict.fromkeys(u for e in members for u in units_of[e])),
                "period": c.get("period"),
                "size": len(members),
                "method": "leiden",
            }
        )
    stats.entities_without_community = len(units_of.keys() - placed)
    return out
