"""A namespace's documents and their front-matter regions, kept per version of the documents table.

Basic search blanks the front matter of the passages it retrieves (`pipeline.core.boilerplate`). It used to
read the whole documents table on every question and turn every text into a Python string to find the
few it needed: 23 ms of Parquet decoding and 11 MB allocated per question on the 11 MB corpus, a third
of a basic query, and under bench/bench_serve_load.py the slowest basic answers. Here the table is read
once per version and held as Arrow (the texts are not Python objects, so the garbage collector never
walks them), and a document's regions are found the first time one of its passages is asked for.

That first time was still the rules' run over the whole document (2 ms for a typical page of the 11 MB
corpus, up to 49 ms; 2.4 s for all 495), paid by the first questions after a start: under
bench/bench_serve_load.py, 16 clients asking at once waited 90 ms on average for it. Chunking computes
the same regions, so it stores them in the text units' schema metadata (`pipeline.ops.incremental`),
and a namespace indexed since reads them from there, once per version of `text_units`; an older index
falls back to the documents.

`body_first` ranks a passage that is mostly front matter (a contents page, a title page) after the
others: blanked, it has little left to answer from, yet its headings match a question's words well enough
that basic search ranked libtasn1's contents page first for a question about a function.
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa

from pipeline.core import schema
from pipeline.core.boilerplate import Region, content_span
from pipeline.core.stored_regions import stored_regions
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions


class DocumentRegions:
    """Each document's front-matter regions, computed once per document on first need."""

    def __init__(self, documents: pa.Table) -> None:
        self._row = {doc_id: i for i, doc_id in enumerate(documents.column("id").to_pylist())}
        self._texts = documents.column("text")
        self._regions: dict[str, tuple[Region, ...]] = {}
        self._lock = threading.Lock()  # concurrent queries share one instance

    def __call__(self, doc_id: str | None) -> tuple[Region, ...]:
        with self._lock:
            found = self._regions.get(doc_id) if doc_id is not None else ()
        if found is not None:
            return found
        row = self._row.get(doc_id)
        regions = () if row is None else content_span(self._texts[row].as_py() or "").regions
        with self._lock:
            self._regions[doc_id] = regions
        return regions


class StoredRegions:
    """The regions chunking stored, by document."""

    def __init__(self, regions: dict[str, tuple[Region, ...]]) -> None:
        self._regions = regions

    def __call__(self, doc_id: str | None) -> tuple[Region, ...]:
        return self._regions.get(doc_id, ()) if doc_id is not None else ()


def document_regions(store: NamespaceStore) -> StoredRegions | DocumentRegions | None:
    """The namespace's documents' regions, or None when it has neither text units nor documents."""
    if store.has_table(schema.TEXT_UNITS):
        stored = cached_index(
            store,
            "stored_regions",
            table_versions(store, parquet=[schema.TEXT_UNITS]),
            lambda: _stored(store),
        )
        if stored is not None:
            return stored
    if not store.has_table(schema.DOCUMENTS):
        return None
    versions = table_versions(store, parquet=[schema.DOCUMENTS])
    return cached_index(
        store,
        "document_regions",
        versions,
        lambda: DocumentRegions(store.read_table(schema.DOCUMENTS, columns=["id", "text"])),
    )


def _stored(store: NamespaceStore) -> StoredRegions | None:
    regions = stored_regions(store.read_schema(schema.TEXT_UNITS).metadata)
    return None if regions is None else StoredRegions(regions)


MOSTLY_FRONT = 0.5  # a passage with more than this share of its letters blanked is front matter


def body_first(rows: list[dict[str, Any]], masked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`masked` (`rows` with their front matter blanked, in the same order) with the passages that are
    mostly front matter moved after all the others; each part keeps its order."""
    body, front = [], []
    for row, blanked in zip(rows, masked, strict=True):
        letters = sum(not c.isspace() for c in row.get("text") or "")
        kept = sum(not c.isspace() for c in blanked.get("text") or "")
        (front if letters and kept < (1 - MOSTLY_FRONT) * letters else body).append(blanked)
    return body + front
