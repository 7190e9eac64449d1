"""What the ingest makes of an input folder: documents and the error rows of what it rejected. Their own
module so that the parsers' door (`pipeline.ops.parsed_files`) builds them without importing the ingest that
calls it (`pipeline.ops.ingest` re-exports both)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    source_path: str
    n_bytes: int
    creation_date: str
    raw_data: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    layout: str | None = None  # JSON layout map of a parsed file (pipeline.parse.layout)


@dataclass(frozen=True)
class IngestError:
    source_path: str
    error_type: str
    reason: str
    row: int | None = None


def document_id(text: str) -> str:
    """sha256 of the text: the same text under a new file name is the same document."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
