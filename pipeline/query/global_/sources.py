"""Where a global answer's points came from (issue 58): each point the reduce used is looked for, sentence
by sentence, in the text units of the communities it cites, and the first sentence found there is a quote
with its own offsets, page and section, as an offline basic answer's quoted sentences are.

A community report cites its own context rows, never a page; its points are sentences of the report, and
an offline report's sentences are the corpus's own (a model's paraphrase is found only where it copied a
sentence whole). So a point found in a cited community's passages is where the reader can check it, and
one found nowhere gives no quote rather than a guessed place. Whitespace is compared collapsed: a report
joins the lines a passage breaks. Documents without a layout give no quotes, so their output stays as it
was. The passages are searched with their front matter blanked (`pipeline.core.boilerplate.mask`), as
every passage an answer quotes is: a point that is a section's heading ('4.4 Error handling functions')
was found first in the table of contents, and highlighted there.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pipeline.core import schema
from pipeline.core.boilerplate import Region, mask
from pipeline.core.sentences import split_sentences
from pipeline.io.store import NamespaceStore
from pipeline.query.answer.front_matter import document_regions
from pipeline.query.answer.pages import DocumentLayouts, document_layouts, place
from pipeline.query.caches.index_cache import cached_index, table_versions

MIN_WORDS = 4  # a shorter sentence ("Returns:") says too little to tell where it came from
_SPACE = re.compile(r"\s+")


# Whether each code point up to U+3000 (the last whitespace one) is whitespace: a lookup, as np.isin
# sorts its operands on every call, which dominated collapsing a thousand-character passage
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3001)], dtype=bool)


def _collapsed(text: str) -> tuple[str, np.ndarray]:
    """`text` with each run of whitespace as one space, and the offset in `text` of each kept character
    (a document's worth at once: numpy, not a loop over characters)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).copy()
    space = _IS_SPACE[np.minimum(codes, len(_IS_SPACE) - 1)] & (codes < len(_IS_SPACE))
    keep = ~(space & np.concatenate(([False], space[:-1])))
    codes[space] = 32
    return codes[keep].tobytes().decode("utf-32-le"), np.flatnonzero(keep)


def _community_units(store: NamespaceStore) -> dict[int, list[tuple[str, int, int]]]:
    """Each community's text units as (document, start, end), in its `text_unit_ids` order: read once per
    version of the two tables, not on every answer."""
    versions = table_versions(store, parquet=[schema.COMMUNITIES, schema.TEXT_UNITS])
    return cached_index(store, "global_point_units", versions, lambda: _read_community_units(store))


def _read_community_units(store: NamespaceStore) -> dict[int, list[tuple[str, int, int]]]:
    if not store.has_table(schema.COMMUNITIES) or not store.has_table(schema.TEXT_UNITS):
        return {}
    t = store.read_table(schema.TEXT_UNITS, columns=["id", "document_id", "start_char", "end_char"])
    by_id = {
        u: (d, a, b)
        for u, d, a, b in zip(
            t.column("id").to_pylist(),
            t.column("document_id").to_pylist(),
            t.column("start_char").to_pylist(),
            t.column("end_char").to_pylist(),
            strict=True,
        )
    }
    c = store.read_table(schema.COMMUNITIES, columns=["community", "text_unit_ids"])
    return {
        community: [by_id[u] for u in ids or [] if u in by_id]
        for community, ids in zip(
            c.column("community").to_pylist(), c.column("text_unit_ids").to_pylist(), strict=True
        )
    }


def _titles(store: NamespaceStore) -> dict[str, str]:
    """Document id -> title, read once per version of the documents table."""
    versions = table_versions(store, parquet=[schema.DOCUMENTS])
    return cached_index(store, "document_titles", versions, lambda: _read_titles(store))


def _read_titles(store: NamespaceStore) -> dict[str, str]:
    docs = store.read_table(schema.DOCUMENTS, columns=["id", "title"])
    return dict(zip(docs.column("id").to_pylist(), docs.column("title").to_pylist(), strict=True))


def point_quotes(store: NamespaceStore, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One quote per point found in its communities' passages, best point first: `text`, `community`,
    `document_id`, `document_title`, `start_char`, `end_char` and, for a paged or sectioned document,
    `page_start`, `page_end` and `document_section`."""
    layouts = document_layouts(store)
    if layouts is None or not layouts.any_layout or not points:
        return []
    units = _community_units(store)
    regions = document_regions(store) or _no_regions
    passages: dict[tuple[str, int, int], tuple[str, np.ndarray]] = {}  # collapsed once per answer
    texts: dict[str, str] = {}
    titles: dict[str, str] | None = None
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for point in points:
        ranges: dict[str, list[tuple[int, int, int]]] = {}  # the cited communities' passages, per document
        for community in point.get("community_ids") or []:
            for doc_id, a, b in units.get(int(community), []):
                ranges.setdefault(doc_id, []).append((a, b, int(community)))
        found = None
        for sentence in split_sentences(point.get("description") or ""):
            needle = _SPACE.sub(" ", sentence.clean).strip()
            if len(needle.split()) >= MIN_WORDS:
                found = next(
                    (
                        f
                        for d in ranges
                        if (f := _find(needle, d, ranges[d], layouts, passages, texts, regions(d)))
                    ),
                    None,
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


def _no_regions(doc_id: str | None) -> tuple[Region, ...]:
    return ()


def _find(
    needle: str,
    doc_id: str,
    ranges: list[tuple[int, int, int]],
    layouts: DocumentLayouts,
    passages: dict[tuple[str, int, int], tuple[str, np.ndarray]],
    texts: dict[str, str],
    regions: tuple[Region, ...] = (),
) -> tuple[str, int, int, str, int] | None:
    """(document, start, end, text, community) of the first place in the document where `needle` occurs
    inside one of `ranges` (the passages a point's communities were built from), whitespace collapsed.

    Only the passages are collapsed and searched, never the whole document: a needle starts and ends
    with a non-space, so its place inside a passage collapses the same way alone as within the document,
    and the earliest place over all passages is the document's first one that a passage holds."""
    best: tuple[int, int] | None = None
    for a, b, _ in ranges:
        if (key := (doc_id, a, b)) not in passages:
            # The document's text converted once per answer (35 ms for 5.7 MB), sliced per passage
            if doc_id not in texts:
                texts[doc_id] = layouts.text(doc_id, 0, None)
            passages[key] = _collapsed(mask(texts[doc_id][a:b], regions, a))
        text, where = passages[key]
        at = text.find(needle)
        if at >= 0:
            start, end = a + int(where[at]), a + int(where[at + len(needle) - 1]) + 1
            best = min(best, (start, end)) if best is not None else (start, end)
    if best is None:
        return None
    start, end = best
    community = next(c for a, b, c in ranges if a <= start and end <= b)
    return doc_id, start, end, needle, community
