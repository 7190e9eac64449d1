"""Where a cited span sits on a PDF page: the rectangles of its characters merged into line boxes, so the
web app can light the quoted sentence on the page image and shade the rest of its passage.

Rules, in order:
1. The document's text is not PDFium's character list: the parse read lines in reading order (columns,
   table cells joined by a tab), rejoined hyphen-broken words and NFKC-normalised the text. No map from
   offsets to PDFium's characters is recorded, so a span is found by *searching the page's characters for
   the span's text*, compared on letters and digits only (each character NFKD-decomposed and case-folded;
   spaces, hyphens, punctuation and accents dropped). This works on every index already built, whatever
   parse wrote it, and survives a later change to the parse's normalisation.
2. The span is clipped to the page's characters (the layout's page range) and its masked ranges (running
   headers, footers, page numbers) are left out: they are never quoted, so never lit.
3. A piece of the span is looked for whole first, at the occurrence nearest where the page's own text
   puts it; failing that line by line (a line is one run in PDFium's order), then word by word near the
   piece found before. What is not found stays unlit: `located` is the share of the span's letters and
   digits that were found.
4. The characters found are merged into line boxes in PDFium's order: a new box starts where a character
   no longer overlaps the box's line, goes back to the left, or jumps a gap wider than three line
   heights (another column or table cell). Loose character boxes (the font's ascent to descent) are used,
   so a line's box covers its full height.
5. Boxes are fractions (0..1) of the page as displayed (rotation and crop box applied by PDFium's own
   page-to-device transform, as the rendered image is), origin top-left: `x`, `y`, `w`, `h`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pipeline.parse.layout import Layout, Page

_GRID = 100_000  # the device size boxes are computed in before they become fractions
_NEAR_WORD = 80  # how far (in letters and digits) from the last piece a lone word may be found
_LINE_BREAK = re.compile(r"[\n\t]+")


@lru_cache(maxsize=4096)
def _fold(ch: str) -> str:
    """The letters and digits `ch` compares as (rule 1): 'ﬁ' → 'fi', 'É' → 'e', '-' → ''."""
    return "".join(c for c in unicodedata.normalize("NFKD", ch.casefold()) if c.isalnum())


def _keyed(text: str, offset: int = 0) -> tuple[str, list[int]]:
    """`text` folded, and the offset (from `offset`) of the character each folded one came from."""
    key: list[str] = []
    where: list[int] = []
    for k, ch in enumerate(text):
        folded = _fold(ch)
        key.append(folded)
        where.extend([offset + k] * len(folded))
    return "".join(key), where


@dataclass(frozen=True)
class PageChars:
    """A text page's characters folded (rule 1), with the PDFium character index of each."""

    key: str
    index: list[int]

    @staticmethod
    def read(textpage: Any) -> PageChars:
        import pypdfium2.raw as c

        key: list[str] = []
        index: list[int] = []
        for i in range(textpage.count_chars()):
            code = c.FPDFText_GetUnicode(textpage.raw, i)
            if not code or 0xD800 <= code <= 0xDFFF:  # a lone surrogate half is no letter
                continue
            folded = _fold(chr(code))
            key.append(folded)
            index.extend([i] * len(folded))
        return PageChars("".join(key), index)


def _nearest(hay: str, needle: str, near: int, limit: int | None = None) -> int | None:
    """Where `needle` occurs in `hay` nearest `near` (an occurrence before it counts twice as far: text
    reads forward); None when none does, or none within `limit`."""
    best: tuple[int, int] | None = None
    pos = hay.find(needle)
    while pos >= 0:
        distance = pos - near if pos >= near else 2 * (near - pos)
        if best is None or distance < best[0]:
            best = (distance, pos)
        if pos > near:  # later occurrences are only farther
            break
        pos = hay.find(needle, pos + 1)
    if best is None or (limit is not None and best[0] > limit):
        return None
    return best[1]


class _Search:
    """Rule 3 for the pieces of one span on one page, each found near where the previous one ended."""

    def __init__(self, chars: PageChars, near: int) -> None:
        self.chars = chars
        self.near = near
        self.found: set[int] = set()  # PDFium character indexes
        self.total = 0  # letters and digits looked for
        self.hits = 0  # ... and found

    def _take(self, pos: int, length: int) -> None:
        self.found.update(self.chars.index[pos : pos + length])
        self.hits += length
        self.near = pos + length

    def piece(self, text: str) -> None:
        key, _ = _keyed(text)
        if not key:
            return
        self.total += len(key)
        pos = _nearest(self.chars.key, key, self.near)
        if pos is not None:
            self._take(pos, len(key))
            return
        self.total -= len(key)  # counted again piece by piece
        for line in _LINE_BREAK.split(text):
            line_key, _ = _keyed(line)
            if not line_key:
                continue
            pos = _nearest(self.chars.key, line_key, self.near)
            if pos is not None:
                self.total += len(line_key)
                self._take(pos, len(line_key))
                continue
            for word in line.split():
                word_key, _ = _keyed(word)
                if not word_key:
                    continue
                self.total += len(word_key)
                pos = _nearest(self.chars.key, word_key, self.near, limit=_NEAR_WORD)
                if pos is not None:
                    self._take(pos, len(word_key))


def _pieces(layout: Layout, page: Page, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) clipped to the page, less its masked ranges (rule 2)."""
    lo, hi = max(start, page.start), min(end, page.end)
    out: list[tuple[int, int]] = []
    for region in sorted(layout.masked, key=lambda r: r.start):
        if region.end <= lo or region.start >= hi:
            continue
        if region.start > lo:
            out.append((lo, region.start))
        lo = max(lo, region.end)
    if lo < hi:
        out.append((lo, hi))
    return out


def locate(
    chars: PageChars, text: str, layout: Layout, page: Page, ranges: list[tuple[int, int]]
) -> tuple[set[int], float | None]:
    """The PDFium character indexes of the document characters in `ranges` found on `page`, and the share
    of their letters and digits found (None: none of them is on this page)."""
    pieces = [p for lo, hi in ranges for p in _pieces(layout, page, lo, hi)]
    if not pieces:
        return set(), None
    # where the page's own text puts the first piece: as many letters and digits precede it there
    search = _Search(chars, len(_keyed(text[page.start : pieces[0][0]])[0]))
    for lo, hi in pieces:
        search.piece(text[lo:hi])
    if not search.total:
        return set(), None
    return search.found, round(search.hits / search.total, 4)


def line_boxes(textpage: Any, indexes: set[int]) -> list[tuple[float, float, float, float]]:
    """(left, bottom, right, top) in page space of the characters' lines (rule 4)."""
    boxes: list[list[float]] = []
    for i in sorted(indexes):
        left, bottom, right, top = textpage.get_charbox(i, loose=True)
        if right <= left or top <= bottom:
            continue  # a generated space or line break has no box
        cur = boxes[-1] if boxes else None
        if cur is not None:
            height = min(top - bottom, cur[3] - cur[1])
            overlap = min(top, cur[3]) - max(bottom, cur[1])
            same_line = overlap >= 0.5 * height and left >= cur[2] - height and left - cur[2] <= 3 * height
            if same_line:
                cur[:] = [min(cur[0], left), min(cur[1], bottom), max(cur[2], right), max(cur[3], top)]
                continue
        boxes.append([left, bottom, right, top])
    return [(b[0], b[1], b[2], b[3]) for b in boxes]


def page_size(page: Any) -> tuple[float, float]:
    """The page's width and height in points as displayed (PDFium's size has the rotation applied)."""
    width, height = page.get_size()
    return float(width), float(height)


def fractions(page: Any, boxes: list[tuple[float, float, float, float]]) -> list[dict[str, float]]:
    """Page-space boxes as fractions of the displayed page, origin top-left (rule 5)."""
    import pypdfium2 as pdfium

    width, height = page_size(page)
    size_x, size_y = _GRID, max(1, round(_GRID * height / width))
    conv = pdfium.PdfPosConv(page, (0, 0, size_x, size_y, 0))
    out = []
    for left, bottom, right, top in boxes:
        corners = [
            conv.to_bitmap(x, y) for x, y in ((left, bottom), (right, top), (left, top), (right, bottom))
        ]
        x0, x1 = min(p[0] for p in corners), max(p[0] for p in corners)
        y0, y1 = min(p[1] for p in corners), max(p[1] for p in corners)
        x0, x1 = max(0, x0), min(size_x, x1)
        y0, y1 = max(0, y0), min(size_y, y1)
        if x1 > x0 and y1 > y0:
            out.append(
                {
                    "x": round(x0 / size_x, 5),
                    "y": round(y0 / size_y, 5),
                    "w": round((x1 - x0) / size_x, 5),
                    "h": round((y1 - y0) / size_y, 5),
                }
            )
    return out


def page_boxes(
    page: Any,
    text: str,
    layout: Layout,
    number: int,
    sentence: tuple[int, int] | None,
    passage: tuple[int, int] | None,
) -> dict[str, Any]:
    """The page's size and, for the quoted `sentence` and the rest of its `passage` (document offsets
    [start, end)), their line boxes on page `number` (1-based) of the open PDFium `page`."""
    where = next(p for p in layout.pages if p.number == number)
    textpage = page.get_textpage()
    try:
        chars = PageChars.read(textpage)
        levels: dict[str, Any] = {}
        for name, span, ranges in (
            ("sentence", sentence, [sentence] if sentence else []),
            ("passage", passage, _without(passage, sentence) if passage else []),
        ):
            if span is None:
                levels[name] = None
                continue
            found, located = locate(chars, text, layout, where, ranges)
            boxes = fractions(page, line_boxes(textpage, found))
            levels[name] = {"start": span[0], "end": span[1], "located": located, "boxes": boxes}
    finally:
        textpage.close()
    width, height = page_size(page)
    return {
        "width_pt": round(width, 2),
        "height_pt": round(height, 2),
        "text_layer": bool(chars.key),
        "page_range": {"start": where.start, "end": where.end},
        **levels,
    }


def _without(passage: tuple[int, int], sentence: tuple[int, int] | None) -> list[tuple[int, int]]:
    """The passage's ranges outside the sentence (the lightly shaded rest)."""
    if sentence is None:
        return [passage]
    lo, hi = passage
    out = [(lo, min(hi, sentence[0])), (max(lo, sentence[1]), hi)]
    return [(a, b) for a, b in out if a < b]
