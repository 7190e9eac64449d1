"""What a mode put in front of the model, taken from its result (`to_dict()`): what `pipeline eval`
scores, and what offline auto search compares. Each mode says what its own result showed (its record's
`shown`, `pipeline.query.common.mode`); the passages of a Sources context, which basic and lazy search
both show, are read here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.io.store import NamespaceStore


@dataclass
class Context:
    texts: list[str] = field(default_factory=list)
    documents: set[str] = field(default_factory=set)  # titles and ids of the documents it came from

    def add_row(self, row: dict[str, Any]) -> None:
        for key in ("document_title", "document_id"):
            if row.get(key):
                self.documents.add(str(row[key]))


def sources_shown(result: dict[str, Any], store: NamespaceStore) -> Context:
    """basic and lazy: the passages of its context (`sources`; lazy's are the sentences extracted from
    its relevant units), as many as the context holds."""
    rows = result.get("context", {}).get("section_rows", {}).get("sources")
    sources = result.get("sources", [])
    out = Context()
    for s in sources[:rows] if rows is not None else sources:
        out.texts.append(s.get("text") or "")
        out.add_row(s)
    return out
