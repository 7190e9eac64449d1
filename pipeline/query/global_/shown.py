"""What a global search showed the model (`pipeline.query.common.shown`): its map points (what the reduce
reads), their documents through the communities they cite."""

from __future__ import annotations

from typing import Any

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query.common.shown import Context


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


def global_shown(result: dict[str, Any], store: NamespaceStore) -> Context:
    out = Context()
    cited: set[int] = set()
    for p in result.get("points", []):
        out.texts.append(p.get("description") or "")
        cited.update(int(c) for c in p.get("community_ids") or ())
    out.documents = _community_documents(store, cited)
    return out
