"""A community report as the web app opens it from a citation: its title, summary, findings and rating,
and the passages it rests on (the community's text units, each with its document, characters, pages and
section), read from the namespace's committed index.

A report cites its own context (`[Data: Entities (3)]`, ids local to the community's context), not the
documents: the passages are the text units of the community's member entities, those naming the most of
its members first, so that a reader can go from a report to the prose behind it.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query.answer.pages import document_layouts, place
from pipeline.service.browse import NotFound

PASSAGES = 12  # the passages a report view lists, the most of the community's members first
SNIPPET = 280  # characters of each passage shown with its link
UNIT_COLUMNS = ["id", "document_id", "start_char", "end_char", "page_start", "page_end", "section", "text"]


def community_report(store: NamespaceStore, community: int) -> dict[str, Any]:
    """Community `community`'s report and its passages (NotFound: no such report in the committed index)."""
    pinned = store.pinned() if store.exists() else store
    if not pinned.has_table(schema.COMMUNITY_REPORTS):
        raise NotFound(f"no community reports in namespace {store.namespace!r}")
    reports = pinned.read_table(schema.COMMUNITY_REPORTS)
    hit = reports.filter(pc.equal(reports.column("community"), community)).to_pylist()
    if not hit:
        raise NotFound(f"no report of community {community} in namespace {store.namespace!r}")
    report = hit[0]
    passages, total = _passages(pinned, community)
    return {
        "namespace": store.namespace,
        "community": community,
        "level": report["level"],
        "title": report["title"],
        "summary": report["summary"],
        "findings": [
            {"summary": f.get("summary"), "explanation": f.get("explanation")} for f in _findings(report)
        ],
        "rating": report["rank"],
        "rating_explanation": report.get("rating_explanation"),
        "method": report.get("method"),
        "children": report.get("children") or [],
        "entities": _member_titles(pinned, community),
        "passages": passages,
        "passages_total": total,
    }


def _community(store: NamespaceStore, community: int) -> dict[str, Any] | None:
    """The community's members and text units: its own, else its sub-communities' (a parent community
    may list none of its own)."""
    if not store.has_table(schema.COMMUNITIES):
        return None
    columns = ["community", "children", "entity_ids", "text_unit_ids"]
    rows = {r["community"]: r for r in store.read_table(schema.COMMUNITIES, columns=columns).to_pylist()}
    if community not in rows:
        return None
    units: list[str] = []
    todo, seen = [community], set()
    while todo and not units:  # breadth first: the nearest level that lists units
        level, todo = todo, []
        for c in level:
            if c in rows and c not in seen:
                seen.add(c)
                units += rows[c]["text_unit_ids"] or []
                todo += rows[c]["children"] or []
    return {**rows[community], "text_unit_ids": list(dict.fromkeys(units))}


def _member_titles(store: NamespaceStore, community: int) -> list[str]:
    found = _community(store, community)
    if found is None or not store.has_table(schema.ENTITIES):
        return []
    entities = store.read_table(schema.ENTITIES, columns=["id", "title"])
    ids = pa.array(found["entity_ids"] or [], pa.string())
    return sorted(entities.filter(pc.is_in(entities.column("id"), value_set=ids)).column("title").to_pylist())


def _passages(store: NamespaceStore, community: int) -> tuple[list[dict[str, Any]], int]:
    """The community's text units (its own or its sub-communities' list; else those naming any member),
    the most members named first, then in document order; and how many there are in all."""
    found = _community(store, community)
    if found is None or not store.has_table(schema.TEXT_UNITS):
        return [], 0
    members = set(found["entity_ids"] or [])
    units = store.read_table(schema.TEXT_UNITS, columns=[*UNIT_COLUMNS, "entity_ids"])
    own = found["text_unit_ids"] or []
    if own:
        units = units.filter(pc.is_in(units.column("id"), value_set=pa.array(own, pa.string())))
    rows = [
        {**r, "named": len(members & set(r["entity_ids"] or []))}
        for r in units.to_pylist()
        if own or members & set(r["entity_ids"] or [])
    ]
    rows.sort(key=lambda r: (-r["named"], r["document_id"] or "", r["start_char"] or 0))
    out = passages(store, rows[:PASSAGES])
    for passage, r in zip(out, rows, strict=False):
        passage["members_named"] = r["named"]
    return out, len(rows)


def passages(store: NamespaceStore, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text unit rows (`UNIT_COLUMNS`) as the web app links them: document, characters, pages, section
    (from the layout where the unit lacks them) and a snippet."""
    titles = _document_titles(store)
    layouts = document_layouts(store)
    out = []
    for r in rows:
        placed = place(dict(r), layouts) if r["page_start"] is None or r["section"] is None else r
        out.append(
            {
                "text_unit_id": r["id"],
                "document_id": r["document_id"],
                "document_title": titles.get(r["document_id"], r["document_id"]),
                "start_char": r["start_char"],
                "end_char": r["end_char"],
                "page_start": placed["page_start"],
                "page_end": placed["page_end"],
                "section": r["section"] or placed.get("document_section"),
                "text": _snippet(r["text"] or ""),
            }
        )
    return out


def _document_titles(store: NamespaceStore) -> dict[str, str]:
    if not store.has_table(schema.DOCUMENTS):
        return {}
    docs = store.read_table(schema.DOCUMENTS, columns=["id", "title"])
    return dict(zip(docs.column("id").to_pylist(), docs.column("title").to_pylist(), strict=True))


def _snippet(text: str) -> str:
    return text if len(text) <= SNIPPET else text[: text.rfind(" ", 0, SNIPPET) or SNIPPET] + "…"


def _findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's findings: its column, else its JSON form (a report imported without the column)."""
    if report.get("findings"):
        return list(report["findings"])
    try:
        return list(json.loads(report.get("full_content_json") or "{}").get("findings") or [])
    except ValueError:
        return []
