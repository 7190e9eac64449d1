"""What each mode put in front of the model, taken from its result (`to_dict()`): what `pipeline eval`
scores, and what offline auto search compares.

- basic: the passages of its context (`sources`, as many as the context holds);
- local: its evidence (the context's sources and claims), the reports' summaries and the entities and
  relationships its context names (`context_rows`);
- lazy: the sentences extracted from its relevant units (`sources`);
- drift: the answers of its steps (what the reduce reads), their documents those of every step's context;
- global: its map points (what the reduce reads), their documents through the communities they cite;
- auto: the context of the mode it routed to.

The entities' and relationships' descriptions local search shows the model are not in its result, only
their names; so local's answer coverage is a lower bound by what those descriptions add.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.core import schema
from pipeline.io.store import NamespaceStore


@dataclass
class Context:
    texts: list[str] = field(default_factory=list)
    documents: set[str] = field(default_factory=set)  # titles and ids of the documents it came from

    def add_row(self, row: dict[str, Any]) -> None:
        for key in ("document_title", "document_id"):
            if row.get(key):
                self.documents.add(str(row[key]))


def _sources(result: dict[str, Any], store: NamespaceStore) -> Context:
    """basic and lazy: the `sources` rows, as many as the context holds."""
    rows = result.get("context", {}).get("section_rows", {}).get("sources")
    sources = result.get("sources", [])
    out = Context()
    for s in sources[:rows] if rows is not None else sources:
        out.texts.append(s.get("text") or "")
        out.add_row(s)
    return out


def _local(result: dict[str, Any], store: NamespaceStore) -> Context:
    out = Context()
    for ev in result.get("evidence", []):
        out.texts.append(ev.get("text") or "")
        out.add_row(ev)
    in_context = {r["id"] for r in result.get("context_rows", []) if r.get("section") == "reports"}
    for c in result.get("communities", []):
        if c.get("id") in in_context:
            out.texts.append(f"{c.get('title', '')}. {c.get('summary', '')}")
    for r in result.get("context_rows", []):
        names = [str(r[k]) for k in ("title", "source", "target") if r.get(k)]
        if r.get("section") in ("entities", "relationships") and names:
            out.texts.append(" ".join(names))
        out.add_row(r)
    return out


def _drift(result: dict[str, Any], store: NamespaceStore) -> Context:
    out = Context()
    for node in result.get("nodes", []):
        if node.get("answer"):
            out.texts.append(node["answer"])
        for c in node.get("citations", []):
            out.add_row(c)
    for row in [*result.get("citations", []), *result.get("context_rows", [])]:
        out.add_row(row)
    return out


def _community_documents(store: NamespaceStore, communities: set[int]) -> set[str]:
    """The titles and ids of the documents under `communities`' text units."""
    if not communities or not store.has_table(schema.COMMUNITIES):
        return set()
    rows = store.read_table(schema.COMMUNITIES, columns=["community", "text_unit_ids"]).to_pylist()
    units = {u for r in rows if r["community"] in communities for u in r["text_unit_ids"] or ()}
    if not units:
        return set()
    docs = {
        r["document_id"]
        for r in store.read_table(schema.TEXT_UNITS, columns=["id", "document_id"]).to_pylist()
        if r["id"] in units
    }
    titles = store.read_table(schema.DOCUMENTS, columns=["id", "title"]).to_pylist()
    return docs | {r["title"] for r in titles if r["id"] in docs}


def _global(result: dict[str, Any], store: NamespaceStore) -> Context:
    out = Context()
    cited: set[int] = set()
    for p in result.get("points", []):
        out.texts.append(p.get("description") or "")
        cited.update(int(c) for c in p.get("community_ids") or ())
    out.documents = _community_documents(store, cited)
    return out


EXTRACT = {"basic": _sources, "local": _local, "drift": _drift, "global": _global, "lazy": _sources}


def mode_context(mode: str, result: dict[str, Any], store: NamespaceStore) -> Context:
    """The context `mode`'s result shows the model; auto's is its routed mode's."""
    if mode == "auto":
        return EXTRACT[result["route"]](result.get("result") or {}, store)
    return EXTRACT[mode](result, store)
