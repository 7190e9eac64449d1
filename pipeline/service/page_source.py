"""Which PDF a page request is about, and where its bytes are read from (`pipeline.service.page_images`
draws its pages, `pipeline.service.page_boxes` finds a cited span on them).

Rules, in order:
1. The document is the index's (its id, or its title), else 404; a document that is not a PDF has no
   pages to draw: 415 `not_a_pdf`. A page outside 1..pages: 404.
2. The index keeps the document's text, not the file's bytes: the PDF is read from the namespace's input
   folder, `<input_root>/<ns>/<source_path>` (where `pipeline index` and the upload endpoints keep it),
   only if that path resolves inside the folder to a regular file (a link cannot lead elsewhere), and
   only if it still has the size it had when indexed. Otherwise 404 `source_unavailable` (a folder
   indexed with `--input` elsewhere, a file removed since) or 409 `source_changed` (a file replaced and
   not yet re-indexed).
3. PDFium is not thread-safe: one call into it at a time in this process (`with_page`).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.ops.input_folder import InputEntry, read_regular
from pipeline.parse.layout import Layout
from pipeline.query.answer.pages import document_layouts
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.service.browse import NotFound
from pipeline.service.errors import ServiceError
from pipeline.settings import Settings

CACHE_FOLDER = "page_images"  # <ns>/page_images/<document id>/p<n>-w<width>.png (`page_images`)

_PDFIUM = threading.Lock()  # rule 3
T = TypeVar("T")


class NotAPdf(ServiceError):
    status, code = 415, "not_a_pdf"


class SourceUnavailable(ServiceError):
    status, code = 404, "source_unavailable"


class SourceChanged(ServiceError):
    status, code = 409, "source_changed"


@dataclass(frozen=True)
class PdfDocument:
    """An indexed PDF: its id and title, its text and layout, and where its file was read from."""

    id: str
    title: str
    text: str
    layout: Layout
    source_path: str
    n_bytes: int

    @property
    def page_count(self) -> int:
        return len(self.layout.pages)

    def check_page(self, page: int) -> None:
        if not 1 <= page <= self.page_count:
            raise NotFound(
                f"{self.title} has no page {page}: its pages are 1 to {self.page_count}",
                detail={"pages": self.page_count},
            )


def _sources(store: NamespaceStore) -> dict[str, tuple[str, int, str | None]]:
    """{document id: (source path, bytes, format)}, read once per version of the documents table."""

    def build() -> dict[str, tuple[str, int, str | None]]:
        rows = store.read_table(schema.DOCUMENTS, columns=["id", "source_path", "n_bytes", "metadata"])
        return {
            r["id"]: (
                r["source_path"] or "",
                r["n_bytes"] or 0,
                json.loads(r["metadata"] or "{}").get("format"),
            )
            for r in rows.to_pylist()
        }

    return cached_index(store, "page_sources", table_versions(store, parquet=[schema.DOCUMENTS]), build)


def pdf_document(store: NamespaceStore, document: str) -> PdfDocument:
    """Document `document` (id or title) of the namespace's index, which must be a PDF (rule 1)."""
    layouts = document_layouts(store)
    found = layouts.find(document) if layouts is not None else None
    if layouts is None or found is None:
        raise NotFound(f"no document {document!r} in namespace {store.namespace!r}")
    doc_id, title = found
    title = title or doc_id
    source_path, n_bytes, fmt = _sources(store).get(doc_id, ("", 0, None))
    layout = layouts.layout(doc_id)
    if fmt != "pdf" or layout is None or not layout.pages:
        raise NotAPdf(
            f"{title} is {'a ' + fmt if fmt else 'not a'} document, not a PDF: it has no page images; "
            "its text is at GET .../documents/{id}",
            detail={"document_id": doc_id, "format": fmt},
        )
    return PdfDocument(doc_id, title, layouts.text(doc_id, 0, None), layout, source_path, n_bytes)


def read_source(settings: Settings, namespace: str, doc: PdfDocument) -> bytes:
    """The PDF's bytes from the namespace's input folder (rule 2)."""
    root = (Path(settings.input_root) / namespace).resolve()
    target = (root / doc.source_path).resolve()
    gone = SourceUnavailable(
        f"the file {doc.source_path!r} of {doc.title} is not in the namespace's input folder any more; "
        "its text is still at GET .../documents/{id}",
        detail={"document_id": doc.id, "source_path": doc.source_path},
    )
    if not doc.source_path or target == root or not target.is_relative_to(root):
        raise gone
    try:
        seen = os.stat(target)
    except OSError:
        raise gone from None
    if not stat.S_ISREG(seen.st_mode):
        raise gone
    if seen.st_size != doc.n_bytes:
        raise SourceChanged(
            f"the file {doc.source_path!r} changed since {doc.title} was indexed; its pages show again "
            "after the next index run",
            detail={"document_id": doc.id, "source_path": doc.source_path},
        )
    try:
        return read_regular(InputEntry(doc.source_path, target, seen))
    except OSError:
        raise gone from None


def with_page(data: bytes, page: int, use: Callable[[Any], T]) -> T:
    """`use(page)` on page `page` (1-based) of the PDF `data`, holding the PDFium lock (rule 3)."""
    import pypdfium2 as pdfium

    with _PDFIUM:
        pdf = pdfium.PdfDocument(data)
        try:
            if page > len(pdf):  # the file has fewer pages than the index read: not the same file
                raise SourceChanged(f"the file has {len(pdf)} pages, not the {page} its index read")
            handle = pdf[page - 1]
            try:
                return use(handle)
            finally:
                handle.close()
        finally:
            pdf.close()
