"""The namespace's entities as the web app's graph explorer reads them: a search by name (with the types
of the whole namespace, for its legend and type filter), and one entity's details: its description,
type, degree, aliases and the passages it was extracted from, each placed in its document.

Plain reads of one namespace's store: the caller has already checked that the key covers it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.ops.graph_view import PALETTE
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.service.browse import entities_table, entity_row
from pipeline.service.errors import IndexNotReady
from pipeline.service.report_view import UNIT_COLUMNS, passages

MAX_QUERY_CHARS = 200  # a name to look for, not a text
SEARCH_LIMIT, MAX_SEARCH_LIMIT = 20, 100
DETAIL_PASSAGES = 20  # the passages an entity's details list, in document order
MAX_DESCRIPTION_CHARS = 4000


def _entities(store: NamespaceStore) -> pa.Table:
    if not store.exists() or not store.has_table(schema.ENTITIES):
        raise IndexNotReady(
            f"namespace {store.namespace!r} has no {schema.ENTITIES} table yet; index it first",
            detail={"namespace": store.namespace, "missing": schema.ENTITIES},
        )
    return entities_table(store)


def _types(store: NamespaceStore, entities: pa.Table) -> list[dict[str, Any]]:
    """Every entity type of the namespace with its count and its colour in the graph explorer, the most
    frequent first: counted once per version of the table."""

    def build() -> list[dict[str, Any]]:
        counts = Counter(t or "unknown" for t in entities.column("type").to_pylist())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return [
            {"type": t, "count": n, "color": PALETTE[i % len(PALETTE)]} for i, (t, n) in enumerate(ranked)
        ]

    return cached_index(store, "web_entity_types", table_versions(store, parquet=[schema.ENTITIES]), build)


def search(
    store: NamespaceStore, query: str, type_: str | None = None, limit: int = SEARCH_LIMIT
) -> dict[str, Any]:
    """The entities whose title or an alias holds `query` (case-insensitive; empty: all), of type `type_`
    when given: exact titles first, then titles that start with it, then the best connected."""
    entities = _entities(store)
    types = _types(store, entities)
    q = query.strip().lower()
    rows = entities.select(["id", "title", "type", "degree", "aliases"])
    if type_:
        rows = rows.filter(pc.equal(rows["type"], type_))
    if q:
        in_title = pc.match_substring(pc.utf8_lower(rows["title"]), q)
        aliases = pc.list_flatten(rows["aliases"])
        parents = pc.list_parent_indices(rows["aliases"])
        hit_alias = pc.match_substring(pc.utf8_lower(aliases), q)
        by_alias = set(pc.filter(parents, hit_alias).to_pylist())
        keep = [bool(t) or i in by_alias for i, t in enumerate(in_title.to_pylist())]
        rows = rows.filter(pa.array(keep, pa.bool_()))
    found = rows.to_pylist()

    def rank(e: dict[str, Any]) -> tuple[int, int, str]:
        title = (e["title"] or "").lower()
        closeness = 0 if title == q else 1 if title.startswith(q) else 2
        return closeness, -int(e["degree"] or 0), title

    found.sort(key=rank)
    return {
        "namespace": store.namespace,
        "query": query,
        "total": len(found),
        "entities": [
            {"id": e["id"], "title": e["title"], "type": e["type"], "degree": int(e["degree"] or 0)}
            for e in found[:limit]
        ],
        "types": types,
    }


def details(store: NamespaceStore, entity: str) -> dict[str, Any]:
    """Entity `entity` (its id or title): description, type, degree, aliases and the passages it was
    extracted from, in document order (at most DETAIL_PASSAGES of `passages_total`)."""
    row = entity_row(store, entity)
    units: list[dict[str, Any]] = []
    if store.has_table(schema.TEXT_UNITS):
        table = store.read_table(schema.ENTITIES, columns=["id", "text_unit_ids"])
        own = table.filter(pc.equal(table["id"], row["id"])).column("text_unit_ids").to_pylist()
        ids = pa.array((own[0] if own else None) or [], pa.string())
        found = store.read_table(schema.TEXT_UNITS, columns=UNIT_COLUMNS)
        units = found.filter(pc.is_in(found["id"], value_set=ids)).to_pylist()
        units.sort(key=lambda u: (u["document_id"] or "", u["start_char"] or 0))
    description = row["description"] or ""
    return {
        "namespace": store.namespace,
        "id": row["id"],
        "title": row["title"],
        "type": row["type"],
        "degree": int(row["degree"] or 0),
        "aliases": list(row["aliases"] or []),
        "description": description[:MAX_DESCRIPTION_CHARS],
        "description_cut": len(description) > MAX_DESCRIPTION_CHARS,
        "passages": passages(store, units[:DETAIL_PASSAGES]),
        "passages_total": len(units),
    }
