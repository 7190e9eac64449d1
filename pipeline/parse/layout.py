"""A parsed document: its text and its layout map (pages, sections, masked ranges), all as character
ranges of that text.

Every later step works on offsets of the one document text, so the map is what turns an offset (a text
unit's `start_char`, a quoted sentence's position) into a page and a section:
- `pages`: PDF pages and PowerPoint slides, 1-based physical numbers as a viewer counts them; ranges are
  contiguous and cover the text (a separator belongs to the page before it).
- `sections`: headings with their level, title and path (the titles of the enclosing sections, then its
  own); a section runs from its heading to the next heading of the same or a higher level.
- `masked`: running headers, footers and page numbers (`Region`, the same (start, end, kind) triple as
  e-book front matter), kept in the text so offsets hold, never extracted nor quoted.
- `no_text_pages` / `ocr_pages`: pages with no text layer, and those of them read by OCR.

Stored as JSON in the documents table's `layout` column (`to_json` / `from_json`).
"""

from __future__ import annotations

import bisect
import json
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from pipeline.parse.glyphs import mend_glyphs

LAYOUT_VERSION = 1


@dataclass(frozen=True)
class Region:
    """A masked range: the (start, end, kind) triple of `pipeline.core.boilerplate.Region`, which front
    matter is stored as; the chunker merges these into it (`boilerplate.with_layout`)."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class Page:
    number: int  # 1-based physical page or slide number
    start: int
    end: int


@dataclass(frozen=True)
class Section:
    title: str
    level: int  # 1 = top
    path: tuple[str, ...]  # enclosing titles, then this one
    start: int
    end: int


@dataclass
class Layout:
    pages: list[Page] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    masked: list[Region] = field(default_factory=list)
    no_text_pages: list[int] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list, repr=False, compare=False)

    def page_at(self, offset: int) -> int | None:
        """The page number holding character `offset` (None when the document has no pages)."""
        if not self.pages:
            return None
        if len(self._starts) != len(self.pages):  # per sentence of every answer: bisect, not a scan
            self._starts = [p.start for p in self.pages]
        i = max(bisect.bisect_right(self._starts, offset) - 1, 0)
        return self.pages[i].number

    def page_span(self, start: int, end: int) -> tuple[int, int] | None:
        """(first, last) page of the characters [start, end)."""
        if not self.pages:
            return None
        first = self.page_at(start)
        last = self.page_at(max(start, end - 1))
        return (first, last) if first is not None and last is not None else None

    def section_at(self, offset: int) -> Section | None:
        """The innermost section holding `offset`."""
        best = None
        for s in self.sections:
            if s.start <= offset < s.end and (best is None or s.level >= best.level):
                best = s
        return best

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": LAYOUT_VERSION,
                "pages": [[p.number, p.start, p.end] for p in self.pages],
                "sections": [[s.level, s.title, list(s.path), s.start, s.end] for s in self.sections],
                "masked": [[r.start, r.end, r.kind] for r in self.masked],
                "no_text_pages": self.no_text_pages,
                "ocr_pages": self.ocr_pages,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @staticmethod
    def from_json(raw: str | None) -> Layout | None:
        if not raw:
            return None
        d: dict[str, Any] = json.loads(raw)
        return Layout(
            pages=[Page(n, s, e) for n, s, e in d.get("pages", [])],
            sections=[Section(t, lv, tuple(p), s, e) for lv, t, p, s, e in d.get("sections", [])],
            masked=[Region(s, e, k) for s, e, k in d.get("masked", [])],
            no_text_pages=list(d.get("no_text_pages", [])),
            ocr_pages=list(d.get("ocr_pages", [])),
        )


class ParseError(Exception):
    """A file that gives no document: `error_type` is its ingest_errors status."""

    def __init__(self, error_type: str, reason: str) -> None:
        super().__init__(reason)
        self.error_type = error_type
        self.reason = reason


@dataclass
class Parsed:
    text: str
    layout: Layout
    format: str
    title: str | None = None
    # per-document problems that still leave a document: (error_type, reason), e.g. no_text_layer
    warnings: list[tuple[str, str]] = field(default_factory=list)
    # pages a budget left unread: {page: (status, reason)}, turned into warnings by the dispatcher
    skipped: dict[int, tuple[str, str]] = field(default_factory=dict)
    ocr_tried: list[int] = field(default_factory=list)  # pages handed to OCR, whatever it read


def normalize(text: str) -> str:
    """NFKC (ligatures 'ﬁ' → 'fi', full-width forms, non-breaking spaces), soft hyphens dropped, missing
    glyphs and detached accents mended (`pipeline.parse.glyphs`)."""
    return mend_glyphs(unicodedata.normalize("NFKC", text).replace("\xad", ""))


class Builder:
    """Appends blocks of text and records pages, headings and masks at the offsets they land on."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._len = 0
        self._pages: list[tuple[int, int]] = []  # (number, start)
        self._heads: list[tuple[int, str, int]] = []  # (level, title, start)
        self.masked: list[Region] = []
        self.no_text_pages: list[int] = []
        self.ocr_pages: list[int] = []

    @property
    def offset(self) -> int:
        return self._len

    def add(self, text: str, sep: str = "\n\n", kind: str | None = None) -> tuple[int, int]:
        """Append `text` (a separator first when the text so far is not empty); its range. With `kind`
        the range is masked."""
        if not text:
            return (self._len, self._len)
        if self._len and sep:
            self._parts.append(sep)
            self._len += len(sep)
        start = self._len
        self._parts.append(text)
        self._len += len(text)
        if kind:
            self.masked.append(Region(start, self._len, kind))
        return (start, self._len)

    def heading(self, level: int, title: str) -> None:
        """Append a heading line and open a section at it."""
        title = " ".join(normalize(title).split())
        if not title:
            return
        start, _ = self.add(title)
        self._heads.append((max(1, level), title, start))

    def open_section(self, level: int, title: str, start: int) -> None:
        """A section whose heading is already in the text (a PDF outline entry, a Markdown line)."""
        title = " ".join(normalize(title).split())
        if title:
            self._heads.append((max(1, level), title, start))

    @property
    def at_page_start(self) -> bool:
        """Nothing added since the last `page()`: the next text opens the page (after a blank line)."""
        return self._len == 0 or (bool(self._pages) and self._len < self._pages[-1][1])

    def page(self, number: int) -> None:
        """The next text belongs to page `number`."""
        self._pages.append((number, self._len + (2 if self._len else 0)))

    def pages_at(self, starts: list[int]) -> None:
        """Pages 1, 2, ... starting at these offsets of the text (a format that marks page breaks inside
        its flowing text, as Word does); breaks at the same offset, or with no text after them, make
        no empty page."""
        text_len = self._len
        kept: list[int] = []
        for start in sorted(starts):
            if start < text_len and (not kept or start > kept[-1]):
                kept.append(start)
        self._pages = [(number, start) for number, start in enumerate(kept, 1)]

    def build(self, fmt: str, title: str | None = None) -> Parsed:
        text = "".join(self._parts)
        pages = []
        for k, (number, start) in enumerate(self._pages):
            start = min(start, len(text)) if k else 0
            end = self._pages[k + 1][1] if k + 1 < len(self._pages) else len(text)
            pages.append(Page(number, start, max(start, min(end, len(text)))))
        layout = Layout(
            pages=pages,
            sections=sections_from_heads(self._heads, len(text)),
            masked=sorted(self.masked, key=lambda r: r.start),
            no_text_pages=self.no_text_pages,
            ocr_pages=self.ocr_pages,
        )
        return Parsed(text, layout, fmt, title)


def sections_from_heads(heads: list[tuple[int, str, int]], length: int) -> list[Section]:
    """Sections from (level, title, start) headings in text order: each ends where the next heading of
    the same or a higher level starts; its path is the titles of the open headings above it."""
    heads = sorted(heads, key=lambda h: h[2])
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    for k, (level, title, start) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = length
        for lv2, _, s2 in heads[k + 1 :]:
            if lv2 <= level:
                end = s2
                break
        out.append(Section(title, level, tuple(t for _, t in stack), start, end))
    return out
