"""What a DRIFT search showed the model (`pipeline.query.common.shown`): the answers of its steps (what
the reduce reads), their documents those of every step's context."""

from __future__ import annotations

from typing import Any

from pipeline.io.store import NamespaceStore
from pipeline.query.common.shown import Context


def drift_shown(result: dict[str, Any], store: NamespaceStore) -> Context:
    out = Context()
    for node in result.get("nodes", []):
        if node.get("answer"):
            out.texts.append(node["answer"])
        for c in node.get("citations", []):
            out.add_row(c)
    for row in [*result.get("citations", []), *result.get("context_rows", [])]:
        out.add_row(row)
    return out
