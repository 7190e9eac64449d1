"""What in a document is not its own text: e-book headers and licences, and front matter inside it.

Two kinds, found by rules that need no model:
- **Outside the content span.** A Project Gutenberg e-book opens with a header and closes with the whole
  licence, between `*** START OF THE PROJECT GUTENBERG EBOOK ... ***` and `*** END OF ... ***` (older
  files say "THIS PROJECT GUTENBERG EBOOK" or "E-BOOK"). The markers are matched, never guessed. Only the
  span between them is chunked.
- **Regions inside it** (`Region`): illustration and transcriber's-note brackets, production credits
  ("Produced by ... Distributed Proofreading Team"), tables of contents and lists of illustrations, text
  with no lower-case letter (title pages, headings, 'STAVE ONE'), prefaces, forewords and dedications
  (heading to next heading), file names run into the text, and transcript speaker tags
  ('KEVIN SCOTT:'). They stay in the text units, so retrieval and citations are unchanged, but
  extraction sees them as blank (`mask`): before this, "Tailpiece", "STAVE THREE" and an illustration
  caption became hub entities, and "MARLEY'S GHOST Marley" one name.

The rules are about layout and publishing conventions, never about one book's words. Documents and
offsets stay intact: `mask` keeps every character's position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

_BOOK = r"(?:THE|THIS)\s+PROJECT\s+GUTENBERG\s+E-?BOOK"
_START = re.compile(rf"^[ \t]*\*{{3}}[ \t]*START\s+OF\s+{_BOOK}[^\n]*$", re.IGNORECASE | re.MULTILINE)
_END = re.compile(rf"^[ \t]*\*{{3}}[ \t]*END\s+OF\s+{_BOOK}[^\n]*$", re.IGNORECASE | re.MULTILINE)

_BRACKETED = re.compile(
    r"\[\s*_?(?:Illustrations?|Frontispiece|Tailpiece|Headpiece|Decoration|Vignette|Ornament|Picture|Image|"
    r"Photo(?:graph)?|Plate|Map|Portrait|Transcriber['’]?s?\s+Notes?|Editor['’]?s?\s+Notes?|Sidenote)\b"
    r"[^\[\]]{0,2000}\]",
    re.IGNORECASE,
)
# A text box drawn with +---+ and |...| (transcriber's notes in many e-books)
_BOX = re.compile(
    r"^[ \t]*\+-{3,}\+[ \t]*\n(?:[ \t]*\|[^\n]*\|[ \t]*\n)+[ \t]*\+-{3,}\+[ \t]*$", re.MULTILINE
)
_CREDITS = re.compile(
    r"\b(?:Produced|Prepared|Transcribed|Digitized)\s+(?:by|from)\b[^\n]{0,300}?(?:\n[^\n]{0,300}?)?"
    r"(?:Proofread(?:ing|ers)(?:\s+Team)?(?:\s+at\s+\S+)?|https?://\S+|www\.\S+|Internet\s+Archive\.?|"
    r"Gutenberg\S*)"
    r"(?:\s*\((?:This|The|Images)\b[^()]{0,400}\))?",
    re.IGNORECASE,
)
_NOTE = re.compile(r"\bTranscriber['’]?s\s+Notes?\b:?[^\n]{0,600}", re.IGNORECASE)
_CONTENTS_HEAD = re.compile(
    r"^[ \t]*(?:TABLE\s+OF\s+CONTENTS|CONTENTS|LIST\s+OF\s+(?:ILLUSTRATIONS|PLATES|FIGURES|MAPS)|"
    r"ILLUSTRATIONS)\.?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
# A contents line ends with its page: wide gap or dot leader ('....' or a PDF's spaced '. . . .'), then a
# number, a range, a Roman numeral.
_PAGE = r"(?:\d+(?:[-–]\d+)?|[ivxlc]+|_?Frontispiece_?|_?Facing\b[^\n]*)[ \t]*$"
_PAGE_REF = re.compile(rf"(?:[ \t]{{2,}}|(?:\.[ \t]?){{3,}}[ \t]*){_PAGE}", re.IGNORECASE)
# Under a contents heading a single tab before the page will do too ('Copyright<TAB>21', a PDF's
# right-aligned page column); alone it would take a table whose last column holds numbers for contents.
_LISTED_PAGE_REF = re.compile(rf"(?:\t|[ \t]{{2,}}|(?:\.[ \t]?){{3,}}[ \t]*){_PAGE}", re.IGNORECASE)
_SECTION_HEAD = re.compile(
    r"^\s*(?:PREFACE|FOREWORD|DEDICATION|ACKNOWLEDG(?:E)?MENTS?|PREFATORY NOTE)\.?\s*$", re.IGNORECASE
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LOWER = re.compile(r"[a-z]")
_LETTER = re.compile(r"[A-Za-z]")
# Three or more words with no lower-case letter in a row: a heading or title line run into the text.
_CAPS_WORD = r"[A-Z][A-Z0-9'’.,:;&_\-]*"  # opens with a letter: '1992, 1996, 2000' is no heading
_CAPS_RUN = re.compile(rf"\b{_CAPS_WORD}(?:[ \t]+{_CAPS_WORD}){{2,}}(?![a-z])")
# A speaker tag opens a line or follows a sentence's end ('... right. KEVIN SCOTT: Yes'), never a
# mid-sentence acronym with a colon ('IATA: ILM').
_SPEAKER = re.compile(
    r"(?:^|(?<=[.!?\"”’)]\s)|(?<=\.txt\s))[ \t]*[A-Z][A-Z'’.\-]+(?:[ \t]+[A-Z][A-Z'’.\-]+){0,3}:(?=\s)",
    re.MULTILINE,
)
# A file name or an identifier_with_underscores run into the text ('Behind_the_Tech_Ep_25.txt'): the
# export's label, not words of the document. Italics markers ('_December_') have no inner underscore.
_FILE_NAME = re.compile(
    r"(?<!\S)(?:[\w.\-]*[A-Za-z0-9]_[\w.\-]*[A-Za-z0-9]_?|\S+\.(?:txt|md|pdf|docx?|html?|json|csv))(?=\s|$)"
)
_CONTENTS_LOOKAHEAD = 2  # paragraphs without a page number allowed inside a list (multi-line entries)


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class ContentSpan:
    """The document's content is `text[start:end]`; `removed` names what lies outside it; `regions` are
    the front matter inside it (sorted, not overlapping)."""

    start: int
    end: int
    removed: tuple[str, ...] = ()
    regions: tuple[Region, ...] = ()

    def outside(self, length: int) -> int:
        """Characters of a `length`-character document that are not content (outside or in regions)."""
        return length - (self.end - self.start) + sum(r.end - r.start for r in self.regions)


def content_span(text: str) -> ContentSpan:
    """The span of `text` that is the document's own content (all of it when no marker is found), and
    the front-matter regions inside it."""
    start, end, removed = 0, len(text), []
    opening = _START.search(text)
    if opening:
        start = opening.end()
        removed.append("gutenberg_header")
    closing = _END.search(text, start)
    if closing:
        end = closing.start()
        removed.append("gutenberg_licence")
    if not text[start:end].strip():  # markers and nothing between them: keep the text as it is
        start, end, removed = 0, len(text), []
    return ContentSpan(start, end, tuple(removed), front_matter(text, start, end))


def with_layout(span: ContentSpan, raw_layout: str | None) -> ContentSpan:
    """`span` with the masked ranges of a parsed file's layout map (running headers, footers and page
    numbers, `pipeline.parse.layout`) merged into its regions: masked as front matter is."""
    if not raw_layout:
        return span
    masks = [Region(start, end, kind) for start, end, kind in json.loads(raw_layout).get("masked", ())]
    if not masks:
        return span
    return ContentSpan(span.start, span.end, span.removed, tuple(_merge([*span.regions, *masks])))


def front_matter(text: str, start: int = 0, end: int | None = None) -> tuple[Region, ...]:
    """The front-matter regions of `text[start:end]`, by the rules in the module docstring."""
    end = len(text) if end is None else end
    text = text.replace("\r", " ")  # CRLF files: the rules read lines; same length, same offsets
    found: list[Region] = []
    for kind, pattern in (
        ("illustration_or_note", _BRACKETED),
        ("note_box", _BOX),
        ("credits", _CREDITS),
        ("transcriber_note", _NOTE),
        ("speaker_tag", _SPEAKER),
        ("file_name", _FILE_NAME),
        ("heading", _CAPS_RUN),
    ):
        found.extend(Region(m.start(), m.end(), kind) for m in pattern.finditer(text, start, end))
    paragraphs = _paragraphs(text, start, end)
    found.extend(_contents(text, paragraphs, start, end))
    found.extend(_front_sections(text, paragraphs))
    found.extend(_capital_paragraphs(text, paragraphs))
    return tuple(_merge(found))


def _paragraphs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, at = [], start
    for m in _PARAGRAPH_BREAK.finditer(text, start, end):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, end))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _is_list_paragraph(block: str) -> bool:
    """Whether a paragraph after a contents heading is still the list."""
    lines = [ln for ln in block.splitlines() if ln.strip()]
    refs = sum(1 for ln in lines if _LISTED_PAGE_REF.search(ln))
    return bool(_LISTED_PAGE_REF.search(lines[-1])) or not _LOWER.search(block) or refs * 2 >= len(lines) > 1


def _contents(text: str, paragraphs: list[tuple[int, int]], start: int, end: int) -> list[Region]:
    """Tables of contents and lists of illustrations: a heading and the list paragraphs after it, and any
    paragraph made mostly of lines that end with a page number."""
    out = []
    for s, e in paragraphs:
        block = text[s:e]
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if len(lines) > 1 and sum(1 for ln in lines if _PAGE_REF.search(ln)) * 2 >= len(lines):
            out.append(Region(s, e, "contents"))
    for head in _CONTENTS_HEAD.finditer(text, start, end):
        after = [p for p in paragraphs if p[0] >= head.end()]
        last, misses = head.end(), 0
        for s, e in after:
            if _is_list_paragraph(text[s:e]):
                last, misses = e, 0
            else:
                misses += 1
                if misses > _CONTENTS_LOOKAHEAD:
                    break
        out.append(Region(head.start(), last, "contents"))
    return out


def _front_sections(text: str, paragraphs: list[tuple[int, int]]) -> list[Region]:
    """A preface, foreword, dedication or acknowledgements: from its heading to the next heading (a
    paragraph with no lower-case letter), by publishing convention the book's apparatus, not its text."""
    out = []
    for k, (s, e) in enumerate(paragraphs):
        if not _SECTION_HEAD.match(text[s:e]):
            continue
        last = e
        for s2, e2 in paragraphs[k + 1 :]:
            if not _LOWER.search(text[s2:e2]) and _LETTER.search(text[s2:e2]):
                break
            last = e2
        out.append(Region(s, last, "front_section"))
    return out


def _capital_paragraphs(text: str, paragraphs: list[tuple[int, int]]) -> list[Region]:
    """Paragraphs with letters but no lower-case letter: title-page lines and headings."""
    return [
        Region(s, e, "heading")
        for s, e in paragraphs
        if e - s <= 400 and _LETTER.search(text[s:e]) and not _LOWER.search(text[s:e])
    ]


def _merge(regions: Iterable[Region]) -> list[Region]:
    out: list[Region] = []
    for r in sorted(regions, key=lambda r: (r.start, -r.end)):
        if out and r.start <= out[-1].end:
            if r.end > out[-1].end:
                out[-1] = Region(out[-1].start, r.end, out[-1].kind)
            continue
        out.append(r)
    return out


def mask(text: str, regions: Iterable[Region], offset: int = 0) -> str:
    """`text` (which starts at `offset` of its document) with the regions blanked: every character becomes
    a space except line breaks, and a region of two or more characters is fenced by paragraph breaks so
    that the words on either side never join into one sentence or name. Length and offsets unchanged."""
    chars = list(text)
    for r in regions:
        lo, hi = max(r.start - offset, 0), min(r.end - offset, len(chars))
        if lo >= hi:
            continue
        for i in range(lo, hi):
            if chars[i] != "\n":
                chars[i] = " "
        if hi - lo >= 2:
            chars[lo] = chars[hi - 1] = "\n"
    return "".join(chars)


_REGIONS_BY_DOCUMENT: dict[tuple[str, int, int], tuple[Region, ...]] = {}
_REGIONS_CACHED = 4096  # documents; only the regions are kept, never the texts


def _document_regions(doc_id: str, text: str, layout: str | None = None) -> tuple[Region, ...]:
    """A document's front matter, computed once per process for one text (global search asks again on
    every question; hashing the text costs far less than the rules)."""
    key = (doc_id, len(text), hash(text))
    regions = _REGIONS_BY_DOCUMENT.get(key)
    if regions is None:
        if len(_REGIONS_BY_DOCUMENT) >= _REGIONS_CACHED:
            _REGIONS_BY_DOCUMENT.clear()
        regions = _REGIONS_BY_DOCUMENT[key] = with_layout(content_span(text), layout).regions
    return regions


def mask_text_units(
    units: pa.Table,
    documents: pa.Table | Callable[[], pa.Table],
    regions: Mapping[str, tuple[Region, ...]] | None = None,
) -> pa.Table:
    """`units` with each text's front matter blanked (`mask`), by `regions` ({document id: its regions},
    as chunking stored them: `pipeline.core.stored_regions.mask_stored`) or, without them, by the rules
    run on `documents` (a table, or what reads it, called only then: its texts and, where it has the
    column, layouts)."""
    if regions is None:
        regions = _regions_of(units, documents)
    texts = [
        mask(text, regions.get(doc_id, ()), start or 0)
        for text, doc_id, start in zip(
            units.column("text").to_pylist(),
            units.column("document_id").to_pylist(),
            units.column("start_char").to_pylist(),
            strict=True,
        )
    ]
    return units.set_column(units.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))


def _regions_of(
    units: pa.Table, documents: pa.Table | Callable[[], pa.Table]
) -> dict[str, tuple[Region, ...]]:
    documents = documents() if callable(documents) else documents
    wanted = set(units.column("document_id").to_pylist())
    has_layout = "layout" in documents.schema.names
    layouts = documents.column("layout").to_pylist() if has_layout else [None] * documents.num_rows
    return {
        doc_id: _document_regions(doc_id, text, layout)
        for doc_id, text, layout in zip(
            documents.column("id").to_pylist(), documents.column("text").to_pylist(), layouts, strict=True
        )
        if doc_id in wanted
    }


def mask_rows(
    rows: list[dict[str, Any]], regions_of: Callable[[str], tuple[Region, ...]]
) -> list[dict[str, Any]]:
    """Rows with `text`, `document_id` and `start_char` (retrieved passages), each text's front matter
    blanked as `mask_text_units` does, by `regions_of(document_id)` (no regions for an unknown
    document); the rows' offsets still name the unmasked source."""
    return [
        {**r, "text": mask(r.get("text") or "", regions_of(r.get("document_id")), r.get("start_char") or 0)}
        for r in rows
    ]
