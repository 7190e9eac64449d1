"""What a local search showed the model (`pipeline.query.common.shown`): its evidence (the context's
sources and claims), the reports' summaries and the entities and relationships its context names
(`context_rows`).

The entities' and relationships' descriptions local search shows the model are not in its result, only
their names; so local's answer coverage is a lower bound by what those descriptions add.
"""

from __future__ import annotations

from typing import Any

from pipeline.io.store import NamespaceStore
from pipeline.query.common.shown import Context


def local_shown(result: dict[str, Any], store: NamespaceStore) -> Context:
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
