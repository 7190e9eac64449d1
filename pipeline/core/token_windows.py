"""Overlapping windows of tokens with exact character offsets: the text units indexing cuts a document
into (`pipeline.ops.chunking`), and the parts global search splits a long report into.

Windows are measured in tiktoken tokens; a window edge that falls inside a multi-byte character (BPE can
split one) is widened to the whole character, so offsets always land on character boundaries.

Page breaks (a paged document's page starts, `breaks`): a window crosses at most one of them, so a unit
covers at most two pages and cites no wider range than that. A window that would cross a second break
ends at it, and the next window starts at that break: a page start is a boundary the reader sees, so no
overlap is repeated across it, and the units stay near `size` tokens (two short pages) instead of
shrinking to one page plus an overlap (on the dev manuals: 286 units of 935 tokens on average, against
377 of 763 with the overlap kept and 263 of 1,051 with no page rule). Otherwise the next window starts
`overlap` tokens before the previous one's end, but not before the break that window crossed. The text
between two breaks is encoded on its own, so each break is a token edge and a window ending there ends
exactly at the page's first character. Without breaks (plain text, Markdown, a document with one page)
the windows are the fixed-step windows of `size` tokens they always were.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from pipeline.core.tokens import get_encoding


def _char_byte_starts(text: str) -> np.ndarray:
    """Byte offset (in UTF-8) at which each character starts, plus the total length at the end."""
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    lengths = 1 + (codepoints > 0x7F) + (codepoints > 0x7FF) + (codepoints > 0xFFFF)
    starts = np.zeros(len(codepoints) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return starts


def _token_lengths(text: str, breaks: list[int], encoding: str) -> tuple[list[int], list[int]]:
    """(byte length of each token, the token index at each break), the text between two breaks encoded
    on its own."""
    enc = get_encoding(encoding)
    lengths: list[int] = []
    at_break: list[int] = []
    edges = [0, *breaks, len(text)]
    for a, b in pairwise(edges):
        if a > 0:
            at_break.append(len(lengths))
        tokens = enc.encode(text[a:b], disallowed_special=())
        lengths.extend(len(t) for t in enc.decode_tokens_bytes(tokens))
    return lengths, at_break


def token_windows(
    text: str, size: int, overlap: int, encoding: str, breaks: Sequence[int] = ()
) -> list[tuple[int, int, int]]:
    """(start_char, end_char, tokens) of each window of at most `size` tokens over `text`, the next
    starting `size - overlap` tokens later; none for an empty text. `breaks`: character offsets of page
    starts in `text` (module docstring)."""
    if overlap >= size:
        raise ValueError(f"chunk_overlap ({overlap}) must be smaller than chunk_size ({size})")
    if not text:
        return []
    inner = sorted({b for b in breaks if 0 < b < len(text)})
    lengths, page_tokens = _token_lengths(text, inner, encoding)
    byte_edges = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=byte_edges[1:])
    char_starts = _char_byte_starts(text)
    # a break at a token edge strictly inside the text (an empty page adds no edge of its own)
    cuts = sorted({t for t in page_tokens if 0 < t < len(lengths)})

    windows: list[tuple[int, int, int]] = []
    step = size - overlap
    n = len(lengths)
    start = 0
    while True:
        end = min(start + size, n)
        first = bisect.bisect_right(cuts, start)  # the first break after the window's start
        cut_short = first + 1 < len(cuts) and cuts[first + 1] < end
        if cut_short:
            end = cuts[first + 1]  # it would cross a second break: end at it
        # floor the start and ceil the end to whole characters
        start_char = int(np.searchsorted(char_starts, byte_edges[start], side="right") - 1)
        end_char = int(np.searchsorted(char_starts, byte_edges[end], side="left"))
        windows.append((start_char, end_char, end - start))
        if end >= n:
            break
        if cut_short:
            start = end  # the next unit opens with the page the previous one stopped before
        elif cuts:
            crossed = cuts[first] if first < len(cuts) and cuts[first] < end else start
            start = max(end - overlap, crossed)
        else:
            start += step
    return windows
