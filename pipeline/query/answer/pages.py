"""Pages and sections for what an answer cites (issue 58): a passage gives its page range and the section
it starts in, a quoted sentence its own page.

A parsed file's layout (`pipeline.parse.layout`, the documents table's `layout` column) maps a document
offset to a page and a section; it is read once per version of the documents table and parsed on first
need per document. Rows of documents without a layout (plain text, tables of rows) get no keys, so their
output stays as it was.

Keys added to a row with `document_id`, `start_char` and `end_char`: `page_start`, `page_end` (1-based,
as a viewer counts pages; absent for a document without pages) and `document_section` (the section path
"5 Arrays › 5.7 Matrix facilities"). `document_section`, not `section`: a citation's `section` already
names the context table it came from (sources, entities, ...).

A quoted sentence is an offline answer's line `- <sentence> [Data: Sources (n)]`: found among the
sentences of the cited passage, it is listed in the result's `quotes` with its own offsets and page.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.core.boilerplate import Region, mask
from pipeline.core.sections import SECTION_SEPARATOR, locate
from pipeline.core.sentences import split_sentences
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import Layout
from pipeline.query.answer.front_matter import document_regions
from pipeline.query.caches.index_cache import cached_index, table_versions


class DocumentLayouts:
    """Each document's title, layout and text, the layout parsed from the stored JSON on first need."""

    def __init__(self, documents: pa.Table) -> None:
        self._ids = documents.column("id")
        self._row = {doc_id: i for i, doc_id in enumerate(self._ids.to_pylist())}
        self._titles = documents.column("title") if "title" in documents.schema.names else None
        self._raw = documents.column("layout") if "layout" in documents.schema.names else None
        self._texts = documents.column("text")
        self._parsed: dict[str, Layout | None] = {}
        self._lock = threading.Lock()  # concurrent queries share one instance

    def layout(self, doc_id: str | None) -> Layout | None:
        if doc_id is None or self._raw is None or (row := self._row.get(doc_id)) is None:
            return None
        with self._lock:
            if doc_id not in self._parsed:
                self._parsed[doc_id] = Layout.from_json(self._raw[row].as_py())
            return self._parsed[doc_id]

    def find(self, document: str) -> tuple[str, str | None] | None:
        """The id and title of the first document whose id, or else whose title, is `document`."""
        row = pc.index(self._ids, document).as_py()
        if row < 0 and self._titles is not None:
            row = pc.index(self._titles, document).as_py()
        if row < 0:
            return None
        return self._ids[row].as_py(), self._titles[row].as_py() if self._titles is not None else None

    @property
    def any_layout(self) -> bool:
        return self._raw is not None and self._raw.null_count < len(self._raw)

    def text(self, doc_id: str | None, start: int, end: int | None) -> str:
        row = self._row.get(doc_id) if doc_id is not None else None
        return "" if row is None else (self._texts[row].as_py() or "")[start:end]


def document_layouts(store: NamespaceStore) -> DocumentLayouts | None:
    """The namespace's documents' layouts, or None when it has no documents table."""
    if not store.has_table(schema.DOCUMENTS):
        return None
    names = store.read_schema(schema.DOCUMENTS).names
    columns = ["id", "text", *(c for c in ("title", "layout") if c in names)]
    return cached_index(
        store,
        "document_layouts",
        table_versions(store, parquet=[schema.DOCUMENTS]),
        lambda: DocumentLayouts(store.read_table(schema.DOCUMENTS, columns=columns)),
    )


def place(row: dict[str, Any], layouts: DocumentLayouts | None) -> dict[str, Any]:
    """`row` with its pages and section set in place, when its document has a layout."""
    layout = layouts.layout(row.get("document_id")) if layouts is not None else None
    start, end = row.get("start_char"), row.get("end_char")
    if layout is None or start is None or end is None:
        return row
    where = locate(layout, int(start), int(end))
    if where.page_start is not None:
        row["page_start"], row["page_end"] = where.page_start, where.page_end
    if where.section is not None:
        row["document_section"] = where.section
    return row


_QUOTE = re.compile(r"^- (?P<sentence>.+?) \[Data: Sources \((?P<id>\d+)\)\]\s*$", re.MULTILINE)


def quotes(
    answer: str,
    citations: list[dict[str, Any]],
    layouts: DocumentLayouts | None,
    regions: Callable[[str | None], tuple[Region, ...]] | None = None,
) -> list[dict]:
    """The answer's quoted sentences found in the passages they cite, with their own offsets and page.
    `regions`: the masked ranges the answer's passages were blanked by (the sentences were split from
    the blanked text, so they are looked for in it)."""
    if layouts is None:
        return []
    by_id = {
        c["id"]: c for c in citations if c.get("section") == "sources" and c.get("start_char") is not None
    }
    out = []
    for m in _QUOTE.finditer(answer):
        cited = by_id.get(int(m.group("id")))
        if cited is None:
            continue
        start, doc_id = int(cited["start_char"]), cited.get("document_id")
        passage = layouts.text(doc_id, start, int(cited["end_char"]))
        if regions is not None:
            passage = mask(passage, regions(doc_id), start)
        found = next((s for s in split_sentences(passage) if s.clean == m.group("sentence")), None)
        if found is None:
            continue
        row = {
            "text": found.clean,
            "source": int(m.group("id")),
            "document_id": doc_id,
            "document_title": cited.get("document_title"),
            "start_char": start + found.start,
            "end_char": start + found.end,
        }
        out.append(place(row, layouts))
    return out


def locate_result(result: Any, store: NamespaceStore) -> None:
    """Pages and sections on a result's citations, sources and evidence, and its `quotes`, in place."""
    layouts = document_layouts(store)
    if layouts is None or not layouts.any_layout:
        return
    for name in ("citations", "sources", "evidence"):
        for row in getattr(result, name, None) or []:
            place(row, layouts)
    if hasattr(result, "quotes"):
        answer = getattr(result, "answer", "") or ""
        result.quotes = quotes(answer, result.citations, layouts, document_regions(store))


def pages_label(row: dict[str, Any]) -> str:
    """'p. 37', 'p. 37–38' or '' (no pages)."""
    first, last = row.get("page_start"), row.get("page_end")
    if first is None:
        return ""
    return f"p. {first}" if last in (None, first) else f"p. {first}–{last}"


def cite_line(row: dict[str, Any]) -> str:
    """How the CLI names a cited place: 'R-intro.pdf p. 37 · 5.7.3 Eigenvalues [20077:20180]' (the
    innermost section's title; the path is in the JSON). A row without pages or section reads as it did
    before layouts: 'notes.txt [120:480]'."""
    parts = [str(row.get("document_title"))]
    if pages := pages_label(row):
        parts.append(pages)
    if section := row.get("document_section"):
        parts.append(("· " if pages else "") + section.split(SECTION_SEPARATOR)[-1])
    return f"{' '.join(parts)} [{row.get('start_char')}:{row.get('end_char')}]"
