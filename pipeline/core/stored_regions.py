"""The front-matter regions of each document, stored in the text-units table's schema metadata: chunking
writes them once (`pipeline.ops.incremental.tag_chunking`), and chunk reuse and query time (which masks
passages with them) read them back instead of running the boilerplate rules again.

They are the rules' regions with a parsed file's masked running headers, footers and page numbers merged
in (`boilerplate.with_layout`). Extraction and the local and global contexts mask text units by them
(`mask_stored`): they used to run the rules on the documents' texts alone, so a PDF's headers reached
entity descriptions, claims and reports ('Chapter 4: Function reference 21' in a libtasn1 report)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

import pyarrow as pa

from pipeline.core.boilerplate import Region, mask_text_units

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


def mask_stored(units: pa.Table, documents: pa.Table | Callable[[], pa.Table]) -> pa.Table:
    """`units` with their front matter blanked by the regions their table stored; a table cut before they
    were stored falls back to the rules run on `documents` (`boilerplate.mask_text_units`)."""
    return mask_text_units(units, documents, stored_regions(units.schema.metadata))
