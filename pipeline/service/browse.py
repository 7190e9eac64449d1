"""What the web app reads besides answers (`web.py` serves it): a document's text around a cited span with
its page and section, an entity's neighbourhood for the graph view, the namespace's `pipeline eval`
report and how the namespace was indexed.

Plain reads of one namespace's store: the caller has already checked that the key covers it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.core.sections import locate
from pipeline.io.store import NamespaceStore
from pipeline.ops.graph_view import GREY, PALETTE, placed, vis_options
from pipeline.parse.layout import Layout
from pipeline.query.answer.pages import document_layouts
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.retrieval.entity_match import NameLookup
from pipeline.service.errors import IndexNotReady, InvalidRequest, ServiceError

AROUND = 600  # characters of the document shown before and after a cited span
MAX_WINDOW = 200_000  # the most of a document one answer carries ("open the whole document")
NEIGHBOURS = 40  # an entity's neighbours in the graph view, the heaviest relationships first


class NotFound(ServiceError):
    status, code = 404, "not_found"


def _need(store: NamespaceStore, table: str) -> None:
    if not store.exists() or not store.has_table(table):
        raise IndexNotReady(
            f"namespace {store.namespace!r} has no {table} table yet; index it first",
            detail={"namespace": store.namespace, "missing": table},
        )


def _document(store: NamespaceStore, document: str) -> tuple[dict[str, Any], str, Layout | None]:
    """The document with id (or title) `document`: its id and title, its text and its layout, all from
    the index cache the queries read them from (not the table again per view)."""
    _need(store, schema.DOCUMENTS)
    layouts = document_layouts(store)
    found = layouts.find(document) if layouts is not None else None  # None: the table went away since
    if layouts is None or found is None:
        raise NotFound(f"no document {document!r} in namespace {store.namespace!r}")
    doc_id, title = found
    return {"id": doc_id, "title": title}, layouts.text(doc_id, 0, None), layouts.layout(doc_id)


def document_view(
    store: NamespaceStore,
    document: str,
    start: int | None = None,
    end: int | None = None,
    page: int | None = None,
    full: bool = False,
) -> dict[str, Any]:
    """The document's text around [start, end) (or page `page`, or, with `full`, as much of the whole
    document as one answer carries, the span inside it), with the span's pages and section."""
    doc, text, layout = _document(store, document)
    length = len(text)
    if start is not None or end is not None:
        start = start if start is not None else end
        end = end if end is not None else start
        assert start is not None and end is not None
        if not 0 <= start <= end <= length:
            raise InvalidRequest(f"span {start}:{end} is not within the document's {length} characters")
    if page is not None:
        pages = {p.number: p for p in (layout.pages if layout else [])}
        if page not in pages:
            raise InvalidRequest(f"{doc['title']} has no page {page}", detail={"pages": len(pages)})
        lo, hi = pages[page].start, pages[page].end
    elif full:
        middle = ((start or 0) + (end or 0)) // 2
        lo = max(0, min(middle - MAX_WINDOW // 2, length - MAX_WINDOW))
        hi = min(length, lo + MAX_WINDOW)
    elif start is not None and end is not None:
        lo, hi = max(0, start - AROUND), min(length, end + AROUND)
        hi = min(hi, lo + MAX_WINDOW)
    else:
        lo, hi = 0, min(length, 2 * AROUND)
    span = None
    if start is not None and end is not None and max(start, lo) <= min(end, hi):
        span = {"start": max(start, lo), "end": min(end, hi)}
    where = locate(layout, start, max(end, start + 1)) if start is not None and end is not None else None
    return {
        "namespace": store.namespace,
        "document_id": doc["id"],
        "title": doc["title"],
        "length": length,
        "window": {"start": lo, "end": hi},
        "text": text[lo:hi],
        "span": span,
        "page_start": where.page_start if where else None,
        "page_end": where.page_end if where else None,
        "section": where.section if where else None,
        "pages": [
            {"number": p.number, "start": p.start, "end": p.end}
            for p in (layout.pages if layout else [])
            if p.start < hi and p.end > lo
        ],
        "page_count": len(layout.pages) if layout else 0,
    }


def entities_table(store: NamespaceStore) -> pa.Table:
    """The entity columns the graph view and the chips read, built once per version of the table."""
    columns = ["id", "title", "type", "degree", "aliases", "description"]
    versions = table_versions(store, parquet=[schema.ENTITIES])
    return cached_index(
        store, "web_entities", versions, lambda: store.read_table(schema.ENTITIES, columns=columns)
    )


def _relationships(store: NamespaceStore) -> pa.Table:
    columns = ["source_id", "target_id", "weight", "description"]
    versions = table_versions(store, parquet=[schema.RELATIONSHIPS])
    return cached_index(
        store, "web_relationships", versions, lambda: store.read_table(schema.RELATIONSHIPS, columns=columns)
    )


def entity_row(store: NamespaceStore, entity: str) -> dict[str, Any]:
    """Entity `entity`, by its id or else its title (any case), as `entities_table` holds it."""
    _need(store, schema.ENTITIES)
    entities = entities_table(store)
    hit = entities.filter(pc.equal(entities["id"], entity))
    if hit.num_rows == 0:
        hit = entities.filter(pc.equal(pc.utf8_lower(entities["title"]), entity.lower()))
    if hit.num_rows == 0:
        raise NotFound(f"no entity {entity!r} in namespace {store.namespace!r}")
    return hit.to_pylist()[0]


def neighbourhood(store: NamespaceStore, entity: str, limit: int = NEIGHBOURS) -> dict[str, Any]:
    """Entity `entity` (its id or title) and its nearest neighbours, as the graph page draws nodes (sized
    by degree, laid out without overlaps) and edges, with the options to draw them."""
    centre = entity_row(store, entity)
    entities = entities_table(store)
    rels: list[dict[str, Any]] = []
    if store.has_table(schema.RELATIONSHIPS):
        table = _relationships(store)
        touching = pc.or_(
            pc.equal(table["source_id"], centre["id"]), pc.equal(table["target_id"], centre["id"])
        )
        rels = sorted(table.filter(touching).to_pylist(), key=lambda r: -(r["weight"] or 0.0))[:limit]
    ids = {centre["id"]} | {r["source_id"] for r in rels} | {r["target_id"] for r in rels}
    rows = entities.filter(pc.is_in(entities["id"], value_set=pa.array(sorted(ids)))).to_pylist()
    colour = _community_colours(store, ids)
    nodes = [
        {
            "id": e["id"],
            "label": e["title"],
            "title": f"{e['title']} ({e['type']})",
            "type": e["type"],
            "description": (e["description"] or "")[:600],
            "color": colour.get(e["id"], GREY),
            "degree": int(e["degree"] or 0),
            "centre": e["id"] == centre["id"],
        }
        for e in rows
    ]
    edges = [
        {
            "from": r["source_id"],
            "to": r["target_id"],
            "value": float(r["weight"] or 1.0),
            "title": (r["description"] or "")[:300],
        }
        for r in rels
    ]
    data = {"nodes": placed(nodes, edges), "edges": edges}
    return {"namespace": store.namespace, "centre": centre["id"], **data, "options": vis_options(data)}


def _community_colours(store: NamespaceStore, ids: set[str]) -> dict[str, str]:
    """The graph page's colour of each entity's top-level community (largest first, when unranked)."""
    if not store.has_table(schema.COMMUNITIES):
        return {}
    top = [
        c
        for c in store.read_table(
            schema.COMMUNITIES, columns=["community", "level", "entity_ids", "size"]
        ).to_pylist()
        if c["level"] == 0
    ]
    top.sort(key=lambda c: (-(c["size"] or 0), c["community"]))
    out: dict[str, str] = {}
    for i, c in enumerate(top):
        for e in c["entity_ids"] or []:
            if e in ids:
                out[e] = PALETTE[i % len(PALETTE)]
    return out


def eval_report(store: NamespaceStore) -> dict[str, Any] | None:
    """The namespace's last `pipeline eval` report (its metrics, without the per-question rows), if any."""
    if not store.exists() or not store.has_file(schema.EVAL_REPORT):
        return None
    return json.loads(store.read_bytes(schema.EVAL_REPORT))


def index_method(store: NamespaceStore) -> str | None:
    """The indexing method the namespace's tables say they were built with (their schema metadata)."""
    for table in (schema.ENTITIES, schema.TEXT_UNITS, schema.DOCUMENTS):
        if store.has_table(table):
            metadata = store.read_schema(table).metadata or {}
            method = metadata.get(b"index_method")
            if method:
                return method.decode("utf-8")
    return None


MENTIONED = 12  # entity chips under an answer, the best connected first


def mentioned(store: NamespaceStore, text: str, limit: int = MENTIONED) -> list[dict[str, Any]]:
    """The entities whose title or an alias appears in `text` as whole words (an answer's entities, for
    an answer whose context listed none, as basic search's does), the best connected first."""
    if not store.exists() or not store.has_table(schema.ENTITIES):
        return []
    lookup = _names(store)
    ids = {
        eid
        for gram in lookup.grams(text)
        for eid in (*lookup.names.get(gram, ()), *lookup.aliases.get(gram, ()))
    }
    if not ids:
        return []
    entities = entities_table(store).select(["id", "title", "type", "degree"])
    rows = entities.filter(pc.is_in(entities["id"], value_set=pa.array(sorted(ids)))).to_pylist()
    found = [
        {"id": e["id"], "title": e["title"], "type": e["type"], "degree": int(e["degree"] or 0)} for e in rows
    ]
    return sorted(found, key=lambda e: (-e["degree"], e["title"]))[:limit]


def _names(store: NamespaceStore) -> NameLookup:
    """Entity ids by title and alias as `_words` writes them, built once per version of the table: a
    name occurs in a text as whole words exactly when it is one of the text's word n-grams, so a
    request looks up its n-grams instead of scanning every name (10,000 entities: 5 ms a request, was 131)."""

    def build() -> NameLookup:
        rows = entities_table(store).select(["id", "title", "aliases"]).to_pylist()
        entities = {e["id"]: {"title": e["title"] or "", "aliases": e["aliases"]} for e in rows}
        return NameLookup.build(entities, normalize=_words)

    versions = table_versions(store, parquet=[schema.ENTITIES])
    return cached_index(store, "web_entity_names", versions, build)


def _words(text: str) -> str:
    """`text` lower-cased as its words joined by single spaces: names match whatever the punctuation."""
    return " ".join(re.findall(r"\w+", text.lower()))
