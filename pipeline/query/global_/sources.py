"""Where a global answer's points came from (issue 58): each point the reduce used is looked for, sentence
by sentence, in the text units of the communities it cites, and the first sentence found there is a quote
with its own offsets, page and section, as an offline basic answer's quoted sentences are.

A community report cites its own context rows, never a page; its points are sentences of the report, and
an offline report's sentences are the corpus's own (a model's paraphrase is found only where it copied a
sentence whole). So a point found in a cited community's passages is where the reader can check it, and
one found nowhere gives no quote rather than a guessed place. Whitespace is compared collapsed: a report
joins the lines a passage breaks. Documents without a layout give no quotes, so their output stays as it
was.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.core.sentences import split_sentences
from pipeline.io.store import NamespaceStore
from pipeline.query.common.pages import DocumentLayouts, document_layouts, place

MIN_WORDS = 4  # a shorter sentence ("Returns:") says too little to tell where it came from
_SPACE = re.compile(r"\s+")


_WHITESPACE = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)


def _collapsed(text: str) -> tuple[str, np.ndarray]:
    """`text` with each run of whitespace as one space, and the offset in `text` of each kept character
    (a document's worth at once: numpy, not a loop over characters)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).copy()
    space = np.isin(codes, _WHITESPACE)
    keep = ~(space & np.concatenate(([False], space[:-1])))
    codes[space] = 32
    return codes[keep].tobytes().decode("utf-32-le"), np.flatnonzero(keep)


def _units_of(store: NamespaceStore, communities: set[int]) -> dict[int, list[dict[str, Any]]]:
    """The text units (id, document, offsets) of each of these communities."""
    if not communities or not store.has_table(schema.COMMUNITIES) or not store.has_table(schema.TEXT_UNITS):
        return {}
    c = store.read_table(schema.COMMUNITIES, columns=["community", "text_unit_ids"])
    c = c.filter(
        pc.is_in(c.column("community"), pa.array(sorted(communities), c.schema.field("community").type))
    )
    ids_of = {row["community"]: row["text_unit_ids"] or [] for row in c.to_pylist()}
    wanted = sorted({u for ids in ids_of.values() for u in ids})
    t = store.read_table(schema.TEXT_UNITS, columns=["id", "document_id", "start_char", "end_char"])
    t = t.filter(pc.is_in(t.column("id"), pa.array(wanted, pa.string())))
    by_id = {row["id"]: row for row in t.to_pylist()}
    return {c: [by_id[u] for u in ids if u in by_id] for c, ids in ids_of.items()}


def _titles(store: NamespaceStore) -> dict[str, str]:
    docs = store.read_table(schema.DOCUMENTS, columns=["id", "title"])
    return dict(zip(docs.column("id").to_pylist(), docs.column("title").to_pylist(), strict=True))


def point_quotes(store: NamespaceStore, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One quote per point found in its communities' passages, best point first: `text`, `community`,
    `document_id`, `document_title`, `start_char`, `end_char` and, for a paged or sectioned document,
    `page_start`, `page_end` and `document_section`."""
    layouts = document_layouts(store)
    if layouts is None or not layouts.any_layout or not points:
        return []
    units = _units_of(store, {int(c) for p in points for c in p.get("community_ids") or []})
    collapsed: dict[str, tuple[str, np.ndarray]] = {}
    titles: dict[str, str] | None = None
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for point in points:
        ranges: dict[str, list[tuple[int, int, int]]] = {}  # the cited communities' passages, per document
        for community in point.get("community_ids") or []:
            for unit in units.get(int(community), []):
                where = (unit["start_char"], unit["end_char"], int(community))
                ranges.setdefault(unit["document_id"], []).append(where)
        found = None
        for sentence in split_sentences(point.get("description") or ""):
            needle = _SPACE.sub(" ", sentence.clean).strip()
            if len(needle.split()) >= MIN_WORDS:
                found = next(
                    (f for d in ranges if (f := _find(needle, d, ranges[d], layouts, collapsed))), None
                )
            if found:
                break
        if found is None or found[:2] in seen:
            continue
        seen.add(found[:2])
        titles = _titles(store) if titles is None else titles
        doc_id, start, end, text, community = found
        row = {
            "text": text,
            "community": community,
            "document_id": doc_id,
            "document_title": titles.get(doc_id),
            "start_char": start,
            "end_char": end,
        }
        out.append(place(row, layouts))
    return out


def _find(
    needle: str,
    doc_id: str,
    ranges: list[tuple[int, int, int]],
    layouts: DocumentLayouts,
    collapsed: dict[str, tuple[str, np.ndarray]],
) -> tuple[str, int, int, str, int] | None:
    """(document, start, end, text, community) of the first place `needle` occurs in the document inside
    one of `ranges` (the passages a point's communities were built from), whitespace collapsed."""
    if doc_id not in collapsed:
        collapsed[doc_id] = _collapsed(layouts.text(doc_id, 0, None))
    text, where = collapsed[doc_id]
    at = text.find(needle)
    while at >= 0:
        start, end = int(where[at]), int(where[at + len(needle) - 1]) + 1
        community = next((c for a, b, c in ranges if a <= start and end <= b), None)
        if community is not None:
            return doc_id, start, end, needle, community
        at = text.find(needle, at + 1)
    return None
