"""The front-matter regions of each document, stored in the text-units table's schema metadata: chunking
writes them once (`pipeline.ops.incremental.tag_chunking`), and chunk reuse and query time (which masks
passages with them) read them back instead of running the boilerplate rules again."""

from __future__ import annotations

import json
from collections.abc import Mapping

from pipeline.core.boilerplate import Region

REGIONS_KEY = b"front_matter_regions"


def regions_metadata(regions: Mapping[str, tuple[Region, ...]]) -> bytes:
    """{document id: its regions} as stored: documents without any left out."""
    stored = {doc: [[r.start, r.end, r.kind] for r in found] for doc, found in regions.items() if found}
    return json.dumps(stored, sort_keys=True, separators=(",", ":")).encode()


def stored_regions(metadata: Mapping[bytes, bytes] | None) -> dict[str, tuple[Region, ...]] | None:
    """{document id: its front-matter regions} as `tag_chunking` stored them (documents without any
    left out); None for a table cut before they were stored."""
    raw = (metadata or {}).get(REGIONS_KEY)
    if raw is None:
        return None
    return {doc: tuple(Region(s, e, kind) for s, e, kind in found) for doc, found in json.loads(raw).items()}
