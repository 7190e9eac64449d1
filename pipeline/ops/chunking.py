"""Token-based chunking that keeps exact character offsets.

Every text unit satisfies ``document.text[start_char:end_char] == unit.text``: a unit is a token window
of `pipeline.core.token_windows` over the document's content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.boilerplate import Region, content_span, with_layout
from pipeline.core.sections import locate
from pipeline.core.token_windows import token_windows
from pipeline.core.tokens import DEFAULT_ENCODING
from pipeline.ops.structure import segments
from pipeline.parse.layout import Layout
from pipeline.settings import default_of


@dataclass(frozen=True)
class TextUnit:
    id: str
    document_id: str
    chunk_index: int
    text: str
    start_char: int
    end_char: int
    n_tokens: int


def text_unit_id(document_id: str, start_char: int, end_char: int) -> str:
    # Position within a content-addressed document: stable across runs, distinct for equal texts
    # that occur in different documents.
    return hashlib.sha256(f"{document_id}:{start_char}:{end_char}".encode()).hexdigest()


def chunk_text(
    document_id: str,
    text: str,
    chunk_size: int = default_of("chunk_size"),
    chunk_overlap: int = default_of("chunk_overlap"),
    encoding: str = DEFAULT_ENCODING,
    span: tuple[int, int] | None = None,
    breaks: Sequence[int] = (),
) -> list[TextUnit]:
    """Split one document (only `text[span[0]:span[1]]` if given) into overlapping token windows with
    character offsets into the whole text. `breaks`: the document's page starts (offsets into the whole
    text), none of which a unit crosses more than once (`pipeline.core.token_windows`)."""
    if chunk_overlap >= chunk_size:
        raise ValueError(f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})")
    if not text:
        return []
    # Offsets stay those of the whole document: the content span is cut out of it, chunked, and its
    # start added back.
    whole, offset = text, 0
    if span is not None:
        offset, text = span[0], text[span[0] : span[1]]
        if not text:
            return []
    units: list[TextUnit] = []
    inside = [b - offset for b in breaks if offset < b < offset + len(text)]
    for start, end, n_tokens in token_windows(text, chunk_size, chunk_overlap, encoding, inside):
        start_char, end_char = offset + start, offset + end
        units.append(
            TextUnit(
                id=text_unit_id(document_id, start_char, end_char),
                document_id=document_id,
                chunk_index=len(units),
                text=whole[start_char:end_char],
                start_char=start_char,
                end_char=end_char,
                n_tokens=n_tokens,
            )
        )
    return units


def chunking_config(chunk_size: int, chunk_overlap: int, encoding: str) -> str:
    """What a base_text_units table was cut with: the settings and the source of the rules (this module,
    `pipeline.core.boilerplate`, `pipeline.ops.structure`, `pipeline.core.sections`,
    `pipeline.core.token_windows` and the parsers of `pipeline.parse`, whose layout places the cuts, pages
    and sections), so that an edited rule re-chunks every document."""
    from pipeline import parse
    from pipeline.core import boilerplate, sections, token_windows
    from pipeline.ops import structure

    code = hashlib.sha256()
    parsers = sorted(Path(parse.__file__).parent.glob("*.py"))
    rules = (
        Path(__file__),
        Path(boilerplate.__file__),
        Path(structure.__file__),
        Path(sections.__file__),
        Path(token_windows.__file__),
    )
    for source in (*rules, *parsers):
        code.update(source.name.encode())
        code.update(Path(source).read_bytes())
    settings = {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "encoding": encoding}
    return json.dumps({**settings, "code": code.hexdigest()}, sort_keys=True)


def chunk_documents_table(documents, chunk_size: int, chunk_overlap: int, encoding: str, previous=None):
    """(text_units table, documents table with text_unit_ids filled, {document id: characters left out as
    e-book header, licence or front matter}) from a `documents` table. Only each document's content span is
    chunked (`pipeline.core.boilerplate`); front matter inside it is chunked, and blanked for extraction.

    `previous`, the base_text_units table of an earlier run: a document it holds (same id, so the same
    text) keeps its rows when the table was cut under the same `chunking_config`, instead of being
    tokenized again (a 1% re-index of the 11 MB scale corpus re-chunked all of it: 10.6 s). The table is
    the one a fresh chunking gives (`human_readable_id` renumbered); it carries its config, the
    per-document boilerplate counts and the front-matter regions in its schema metadata, for the next
    run and for the queries that blank front matter (`pipeline.query.answer.front_matter`)."""
    import pyarrow as pa

    from pipeline.core.schema import TEXT_UNITS_SCHEMA
    from pipeline.core.tables import to_table
    from pipeline.ops.incremental import reusable_chunks, tag_chunking

    config = chunking_config(chunk_size, chunk_overlap, encoding)
    ids = documents.column("id").to_pylist()
    reused, reused_outside, reused_regions = reusable_chunks(previous, config, set(ids))
    texts = documents.column("text").to_pylist()
    # parsed files' running headers and footers (pipeline.parse.layout) are masked as front matter is
    has_layout = "layout" in documents.schema.names
    layouts = documents.column("layout").to_pylist() if has_layout else [None] * len(ids)
    rows: list[dict] = []
    per_doc: list[list[str]] = []
    outside: dict[str, int] = {}
    regions: dict[str, tuple[Region, ...]] = {}
    for doc_id, text, layout in zip(ids, texts, layouts, strict=True):
        if doc_id in reused:
            if doc_id in reused_outside:
                outside[doc_id] = reused_outside[doc_id]
            regions[doc_id] = reused_regions.get(doc_id, ())
            per_doc.append([r["id"] for r in reused[doc_id]])
            for row in reused[doc_id]:
                rows.append({**row, "human_readable_id": len(rows)})
            continue
        span = with_layout(content_span(text), layout)
        regions[doc_id] = span.regions
        if span.removed or span.regions:
            outside[doc_id] = span.outside(len(text))
        parsed = Layout.from_json(layout)
        # a unit covers at most two pages, so a cited passage names one or two pages, not three
        breaks = [p.start for p in parsed.pages[1:]] if parsed is not None else []
        units = [
            u
            for piece in segments(text, (span.start, span.end), parsed, chunk_size, chunk_overlap, encoding)
            for u in chunk_text(doc_id, text, chunk_size, chunk_overlap, encoding, piece, breaks)
        ]
        per_doc.append([u.id for u in units])
        for index, u in enumerate(units):
            where = locate(parsed, u.start_char, u.end_char)
            rows.append(
                {
                    "id": u.id,
                    "human_readable_id": len(rows),
                    "text": u.text,
                    "n_tokens": u.n_tokens,
                    "document_id": u.document_id,
                    "entity_ids": [],
                    "relationship_ids": [],
                    "covariate_ids": [],
                    "start_char": u.start_char,
                    "end_char": u.end_char,
                    "chunk_index": index,  # across the pieces a long section's heading starts
                    "page_start": where.page_start,
                    "page_end": where.page_end,
                    "section": where.section,
                }
            )
    text_units = tag_chunking(to_table(rows, TEXT_UNITS_SCHEMA), config, outside, regions)
    col = documents.schema.get_field_index("text_unit_ids")
    documents = documents.set_column(col, "text_unit_ids", pa.array(per_doc, type=pa.list_(pa.string())))
    return text_units, documents, outside


def offset_mismatches(documents, text_units) -> list[str]:
    """Ids of text units whose text is not exactly document.text[start_char:end_char]."""
    doc_text = dict(
        zip(documents.column("id").to_pylist(), documents.column("text").to_pylist(), strict=True)
    )
    bad = []
    for uid, did, text, s, e in zip(
        text_units.column("id").to_pylist(),
        text_units.column("document_id").to_pylist(),
        text_units.column("text").to_pylist(),
        text_units.column("start_char").to_pylist(),
        text_units.column("end_char").to_pylist(),
        strict=True,
    ):
        source = doc_text.get(did)
        if source is None or source[s:e] != text:
            bad.append(uid)
    return bad
