"""Word (.docx) through python-docx and PowerPoint (.pptx) through python-pptx.

- Word: the body in order, paragraphs and tables; `Heading N` and `Title` styles open sections; a table
  row is one tab-separated line; a picture gives its alt text (`descr`), a caption is a paragraph like
  any other. A .docx has no physical pages until it is laid out; its page map is where the file itself
  says pages break: explicit page breaks, `pageBreakBefore` paragraphs, and the `lastRenderedPageBreak`
  marks Word leaves where its last layout broke pages. A file with none (most generated ones) has no
  page map.
- PowerPoint: each slide is a page; its title placeholder opens a level-1 section; shapes are read top
  to bottom, left to right; tables row by row; pictures by their alt text; speaker notes follow the
  slide's text.
"""

from __future__ import annotations

import io
import re

from pipeline.parse.layout import Builder, Parsed, ParseError, normalize

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
# An XML namespace name (lxml Clark notation): an identifier inside the file, never fetched.
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _clean(text: str) -> str:
    return "\n".join(" ".join(ln.split()) for ln in normalize(text).splitlines() if ln.strip())


def _row_lines(rows) -> str:  # rows: iterable of iterables of cell texts
    out = []
    for cells in rows:
        cells = [" ".join(normalize(c).split()) for c in cells]
        if any(cells):
            out.append("\t".join(cells))
    return "\n".join(out)


def _alt_texts(element) -> list[str]:
    """The alt text (`descr`, else `title`) of the drawings inside an OOXML element."""
    out = []
    for el in element.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag.endswith("}docPr") or tag.endswith("}cNvPr"):
            alt = (el.get("descr") or el.get("title") or "").strip()
            if alt:
                out.append(alt)
    return out


def _breaks(paragraph) -> list[str]:
    """The paragraph's text before each page break inside it, in order (empty: the page starts with the
    paragraph). Word marks an explicit break and the rendered break after it both; `_pages` merges them."""
    out = []
    if paragraph.find(f"{_W}pPr/{_W}pageBreakBefore") is not None:
        out.append("")
    before: list[str] = []
    for el in paragraph.iter(f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}lastRenderedPageBreak"):
        if el.tag == f"{_W}t":
            before.append(el.text or "")
        elif el.tag == f"{_W}tab":
            before.append("\t")
        elif el.tag == f"{_W}lastRenderedPageBreak" or el.get(f"{_W}type") == "page":
            out.append("".join(before))
    return out


def _break_offset(text: str, before: str) -> int:
    """Where in the paragraph's cleaned `text` the page breaks, given the raw text `before` the break:
    at a word boundary, since the chunker cuts at page starts."""
    head = _clean(before)
    if not head or not text.startswith(head):
        return 0
    k = len(head)
    while k < len(text) and text[k].isspace():
        k += 1
    return k


def parse_docx(data: bytes) -> Parsed:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises KeyError, ValueError, BadZipFile... for broken packages
        raise ParseError("corrupt", f"not a readable Word document: {type(exc).__name__}: {exc}") from None
    b = Builder()
    breaks: list[int] = []  # offsets where a page starts, after the first
    # python-docx looks a paragraph's style up among all the styles each time it is asked (a 1 MB
    # document.xml of one-word paragraphs took 55 s): one lookup per style the document uses
    styles: dict[str | None, str] = {}
    for child in document.element.body.iterchildren():
        if child.tag == f"{_W}p":
            para = Paragraph(child, document)
            ref = child.find(f"{_W}pPr/{_W}pStyle")
            style_id = ref.get(f"{_W}val") if ref is not None else None
            if style_id not in styles:
                styles[style_id] = (para.style.name if para.style is not None else "") or ""
            style = styles[style_id]
            text = _clean(para.text)
            heading = _HEADING_STYLE.match(style)
            at = b.offset + (2 if b.offset else 0)  # where this paragraph's text will start
            if heading and text:
                b.heading(int(heading.group(1)), text)
            elif style.lower() == "title" and text:
                b.heading(1, text)
            elif text:
                b.add(text)
            breaks += [at + _break_offset(text, before) for before in _breaks(child)]
            for alt in _alt_texts(child):
                b.add(_clean(alt))
        elif child.tag == f"{_W}tbl":
            table = Table(child, document)
            b.add(_row_lines([c.text for c in row.cells] for row in table.rows))
    if breaks:
        b.pages_at([0, *breaks])
    title = (document.core_properties.title or "").strip() or None
    return b.build("docx", title)


def _shape_text(shape) -> list[str]:
    out = []
    if getattr(shape, "has_table", False) and shape.has_table:
        out.append(_row_lines([c.text for c in row.cells] for row in shape.table.rows))
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        text = _clean(shape.text_frame.text)
        if text:
            out.append(text)
    if hasattr(shape, "shapes"):  # a group
        for inner in sorted(shape.shapes, key=lambda s: (s.top or 0, s.left or 0)):
            out.extend(_shape_text(inner))
    elif shape.shape_type is not None and "PICTURE" in str(shape.shape_type):
        out.extend(_clean(a) for a in _alt_texts(shape._element))
    return [t for t in out if t]


def parse_pptx(data: bytes) -> Parsed:
    import pptx

    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise ParseError("corrupt", f"not a readable PowerPoint file: {type(exc).__name__}: {exc}") from None
    slides = list(deck.slides)
    if not slides:
        raise ParseError("zero_pages", "the presentation has no slides")
    b = Builder()
    for number, slide in enumerate(slides, start=1):
        b.page(number)
        title_shape = slide.shapes.title
        title = _clean(title_shape.text_frame.text) if title_shape is not None else ""
        if title:
            b.heading(1, " ".join(title.split()))
        for shape in sorted(slide.shapes, key=lambda s: (s.top or 0, s.left or 0)):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            for text in _shape_text(shape):
                b.add(text)
        if slide.has_notes_slide:
            notes = _clean(slide.notes_slide.notes_text_frame.text)
            if notes:
                b.add(notes)
    title = (deck.core_properties.title or "").strip() or None
    return b.build("pptx", title)
