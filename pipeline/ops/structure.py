"""Structure-aware chunking: where a parsed file's sections start units (issue 58; the pages and section
each unit carries are `pipeline.core.sections`).

A heading starts a new unit when its section is long enough to fill one (at least `chunk_size` tokens):
a short section stays inside the window that covers it, as it would in plain text, so a document of many
small sections is not cut into many small units. A cut that would leave a piece shorter than the overlap
before it (a chapter heading followed at once by its first long subsection) is dropped: the chapter's
heading opens the unit and the subsection's text fills it, rather than a unit holding a heading alone.
"""

from __future__ import annotations

import numpy as np

from pipeline.core.tokens import get_encoding
from pipeline.parse.layout import Layout


def segments(
    text: str,
    span: tuple[int, int],
    layout: Layout | None,
    chunk_size: int,
    chunk_overlap: int,
    encoding: str,
) -> list[tuple[int, int]]:
    """The content span cut at the starts of the sections long enough to fill a unit; each piece is
    chunked on its own. One piece (the span) when there is no layout or no such section."""
    start, end = span
    if layout is None or not layout.sections or end <= start:
        return [span]
    candidates = sorted({s.start for s in layout.sections if start < s.start < end})
    if not candidates:
        return [span]
    tokens_before = _token_counter(text[start:end], encoding)

    def tokens(a: int, b: int) -> int:
        return tokens_before(b - start) - tokens_before(a - start)

    long_starts = [
        s.start
        for s in layout.sections
        if start < s.start < end and tokens(s.start, min(s.end, end)) >= chunk_size
    ]
    cuts = [start]
    for cut in sorted(set(long_starts)):
        if tokens(cuts[-1], cut) >= max(chunk_overlap, 1):
            cuts.append(cut)  # else this heading stays in the unit of the heading just before it
    return list(zip(cuts, [*cuts[1:], end], strict=True))


def _token_counter(text: str, encoding: str):
    """f(char offset) -> tokens before it, from one encoding of `text` (a threshold, not a window edge:
    a token that straddles the offset counts as before it)."""
    enc = get_encoding(encoding)
    tokens = enc.encode(text, disallowed_special=())
    byte_edges = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in enc.decode_tokens_bytes(tokens)], out=byte_edges[1:])
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    lengths = 1 + (codepoints > 0x7F) + (codepoints > 0x7FF) + (codepoints > 0xFFFF)
    char_bytes = np.zeros(len(codepoints) + 1, dtype=np.int64)
    np.cumsum(lengths, out=char_bytes[1:])

    def before(offset: int) -> int:
        offset = min(max(offset, 0), len(text))
        return int(np.searchsorted(byte_edges, char_bytes[offset], side="left"))

    return before
