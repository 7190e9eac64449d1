"""Overlapping windows of tokens with exact character offsets: the text units indexing cuts a document
into (`pipeline.ops.chunking`), and the parts global search splits a long report into.

Windows are measured in tiktoken tokens; a window edge that falls inside a multi-byte character (BPE can
split one) is widened to the whole character, so offsets always land on character boundaries.
"""

from __future__ import annotations

import numpy as np

from pipeline.core.tokens import get_encoding


def _char_byte_starts(text: str) -> np.ndarray:
    """Byte offset (in UTF-8) at which each character starts, plus the total length at the end."""
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    lengths = 1 + (codepoints > 0x7F) + (codepoints > 0x7FF) + (codepoints > 0xFFFF)
    starts = np.zeros(len(codepoints) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return starts


def token_windows(text: str, size: int, overlap: int, encoding: str) -> list[tuple[int, int, int]]:
    """(start_char, end_char, tokens) of each window of `size` tokens over `text`, the next starting
    `size - overlap` tokens later; none for an empty text."""
    if overlap >= size:
        raise ValueError(f"chunk_overlap ({overlap}) must be smaller than chunk_size ({size})")
    if not text:
        return []
    enc = get_encoding(encoding)
    tokens = enc.encode(text, disallowed_special=())
    byte_edges = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in enc.decode_tokens_bytes(tokens)], out=byte_edges[1:])
    char_starts = _char_byte_starts(text)

    windows: list[tuple[int, int, int]] = []
    step = size - overlap
    n = len(tokens)
    start = 0
    while True:
        end = min(start + size, n)
        # floor the start and ceil the end to whole characters
        start_char = int(np.searchsorted(char_starts, byte_edges[start], side="right") - 1)
        end_char = int(np.searchsorted(char_starts, byte_edges[end], side="left"))
        windows.append((start_char, end_char, end - start))
        if end >= n:
            break
        start += step
    return windows
