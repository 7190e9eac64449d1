"""PDF: the text layer through PDFium (pypdfium2), one page at a time, with a page map, the outline as
sections, running headers and footers masked, two-column pages read column by column, and OCR for
pages without a text layer (`pipeline.parse.ocr`).

PDFium was measured against pdfminer.six on the dev manuals (docs/parsing.md): 311 gnuplot pages in
0.6 s of plain text (2.4 s with the per-segment boxes used here) against ~23 pages/s for pdfminer, with
the same words. The boxes are what reading order, columns, tables and headers are decided from:
- a segment's box gives its line (segments whose vertical middles fall in one band);
- a wide horizontal gap inside a line is a table cell boundary: a tab, so a row stays one line;
- a page whose text sits mostly left or right of its middle, and little across it, has two columns;
- the first and last lines of a page inside the top or bottom band are header and footer candidates;
  one that recurs (digits ignored) on several pages, or is only a page number, is masked.

Budgets (`pipeline.parse.bounds`): a page tree of more than `max_pages` pages is refused before any page
is opened (PDFium counts a tree of shared nodes without walking each page); the page size and OCR
budgets of each page are `pipeline.parse.pdf_budget`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.parse.bounds import OcrBudget, ParseLimits, too_many_pages
from pipeline.parse.layout import Builder, Parsed, ParseError, normalize, sections_from_heads
from pipeline.parse.ocr import OcrPolicy
from pipeline.parse.pdf_budget import PageBudgets

_BAND = 0.09  # header/footer band: this share of the page height at its top and bottom
_EDGE_LINES = 2  # lines at each end of a page that may be a header or footer
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxlcdm]+$", re.IGNORECASE)
_HYPHEN_END = re.compile(r"(?<=[A-Za-z])-$")


@dataclass
class _Line:
    text: str
    top: float
    bottom: float
    x0: float
    x1: float
    size: float = 0.0  # font size in points (the largest on the line)


@dataclass
class _PageText:
    number: int
    lines: list[_Line]
    height: float
    no_text: bool = False  # no text layer: `lines` are what OCR read, if anything


def _open(data: bytes):  # -> pdfium.PdfDocument
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        msg = str(exc)
        # PDFium's last error outlives its document, so the bytes confirm what its message says
        if "password" in msg.lower() and b"/Encrypt" in data:
            raise ParseError("encrypted", "the PDF is encrypted (password required)") from None
        # PDFium refuses an empty page tree as a load failure; say what it is
        if re.search(rb"/Count\s+0\b", data) and not re.search(rb"/Type\s*/Page(?!s)", data):
            raise ParseError("zero_pages", "the PDF has no pages") from None
        raise ParseError("corrupt", f"not a readable PDF: {msg}") from None


def _segments(textpage) -> list[tuple[float, float, float, float, str, float]]:
    """(left, bottom, right, top, text, font size) of each run of text PDFium finds on the page."""
    import pypdfium2.raw as c

    out = []
    for k in range(textpage.count_rects()):
        left, bottom, right, top = textpage.get_rect(k)
        text = textpage.get_text_bounded(left, bottom, right, top)
        text = text.replace("\r", "").replace("\n", " ")
        if text.strip():
            index = textpage.get_index((left + right) / 2, (bottom + top) / 2, 2, 2)
            size = (
                c.FPDFText_GetFontSize(textpage.raw, index)
                if index is not None and index >= 0
                else top - bottom
            )
            out.append((left, bottom, right, top, text, size))
    return out


def _lines(segments: list[tuple]) -> list[_Line]:
    """Segments grouped into lines (top to bottom), cells apart by a wide gap joined by a tab."""
    rows: list[list[tuple]] = []
    for seg in sorted(segments, key=lambda s: -(s[1] + s[3]) / 2):
        mid = (seg[1] + seg[3]) / 2
        if rows:
            last = rows[-1]
            lo, hi = min(s[1] for s in last), max(s[3] for s in last)
            if lo <= mid <= hi:
                last.append(seg)
                continue
        rows.append([seg])
    lines = []
    for row in rows:
        row.sort(key=lambda s: s[0])
        height = max(s[3] - s[1] for s in row)
        parts = [row[0][4].strip()]
        for prev, seg in zip(row, row[1:], strict=False):
            # segments split at a font change ('"' then 'close' in typewriter) touch: no space between
            # them unless the text or the gap has one
            gap = seg[0] - prev[2]
            if gap > 1.5 * height:
                parts.append("\t")
            elif gap > 0.2 * height or prev[4][-1:].isspace() or seg[4][:1].isspace():
                parts.append(" ")
            parts.append(seg[4].strip())
        text = "".join(parts)
        top, bottom = max(s[3] for s in row), min(s[1] for s in row)
        lines.append(_Line(text, top, bottom, row[0][0], row[-1][2], max(s[5] for s in row)))
    return lines


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _read_order(segments, width: float) -> list[_Line]:
    """Lines in reading order; a two-column page gives its left column, then its right one, between the
    full-width lines (titles, figures) that cut across both."""
    mid = width / 2
    left = [s for s in segments if s[2] <= mid + 2]
    right = [s for s in segments if s[0] >= mid - 2]
    across = [s for s in segments if s[2] > mid + 2 and s[0] < mid - 2]
    chars = sum(len(s[4]) for s in segments) or 1
    two = (
        sum(len(s[4]) for s in left) > 0.25 * chars
        and sum(len(s[4]) for s in right) > 0.25 * chars
        and sum(len(s[4]) for s in across) < 0.25 * chars
        and len(left) >= 3
        and len(right) >= 3
        # columns of prose meet near the middle; a table's far cells do not (its rows stay rows)
        and _median([s[2] for s in left]) >= mid - 0.15 * width
        and _median([s[0] for s in right]) <= mid + 0.1 * width
    )
    if not two:
        return _lines(segments)
    spans = _lines(across)
    tops = sorted((ln.top for ln in spans), reverse=True)

    def segment_of(line: _Line) -> int:
        return sum(1 for t in tops if t > line.top)

    keyed = [((segment_of(ln), 2, -ln.top), ln) for ln in spans]
    keyed += [((segment_of(ln), 0, -ln.top), ln) for ln in _lines(left)]
    keyed += [((segment_of(ln), 1, -ln.top), ln) for ln in _lines(right)]
    return [ln for _, ln in sorted(keyed, key=lambda kv: kv[0])]


def _has_images(page) -> bool:
    import pypdfium2.raw as c

    return any(obj.type == c.FPDF_PAGEOBJ_IMAGE for obj in page.get_objects())


def _ocr_lines(text: str, height: float) -> list[_Line]:
    """OCR output as lines with stand-in positions, 10 units high: the first line in the header band,
    the last in the footer band (so a scanned page's running header is found as a text page's is), the
    ones between 12 apart, 24 where a blank line marks a new paragraph."""
    out: list[_Line] = []
    top = height * (1 - _BAND) - 2
    blank = False
    for row in (ln.strip() for ln in text.splitlines()):
        if not row:
            blank = bool(out)
            continue
        if out:
            top -= 24 if blank else 12
        out.append(_Line(row, top, top - 10, 0.0, 0.0))
        blank = False
    if out:
        out[0].top, out[0].bottom = height, height - 10
    if len(out) > 2:
        out[-1].top, out[-1].bottom = 10.0, 0.0
    return out


def _edge_key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def _is_page_number(text: str) -> bool:
    t = text.strip().strip("-–— ").replace("page", "").replace("Page", "").strip()
    return bool(t) and (t.isdigit() or bool(_ROMAN.match(t)))


def _edges(pages: list[_PageText]) -> dict[tuple[int, int], str]:
    """{(page index, line index): kind} of the running headers, footers and page numbers."""
    candidates: dict[tuple[int, int], tuple[str, str]] = {}
    counts: dict[str, int] = {}
    for pi, page in enumerate(pages):
        n = len(page.lines)
        for li in list(range(min(_EDGE_LINES, n))) + list(range(max(n - _EDGE_LINES, 0), n)):
            line = page.lines[li]
            if line.bottom >= page.height * (1 - _BAND):
                kind = "running_header"
            elif line.top <= page.height * _BAND:
                kind = "running_footer"
            else:
                continue
            key = _edge_key(line.text)
            if (pi, li) not in candidates:
                candidates[(pi, li)] = (kind, key)
                counts[key] = counts.get(key, 0) + 1
    need = 2 if len(pages) <= 4 else 3
    out = {}
    for (pi, li), (kind, key) in candidates.items():
        if _is_page_number(pages[pi].lines[li].text):
            out[(pi, li)] = "page_number"
        elif counts[key] >= need:
            out[(pi, li)] = kind
    return out


def _join_lines(lines: list[_Line]) -> tuple[str, list[int]]:
    """One run of a page's body lines as text, and where each line starts in it: a hyphen-broken word
    rejoined ('com-' + 'puted'; PDFium marks a line-end hyphen as U+0002), a blank line where a gap
    wider than the page's usual line spacing says a new paragraph starts."""
    gaps = [a.bottom - b.top for a, b in zip(lines, lines[1:], strict=False)]
    usual = _median(gaps) if gaps else 0.0
    height = _median([ln.top - ln.bottom for ln in lines]) if lines else 0.0
    out: list[str] = []
    starts: list[int] = []
    at = 0
    for k, line in enumerate(lines):
        text = normalize(line.text)
        if k:
            prev = lines[k - 1].text
            ends = prev.rstrip("\x02\xad") + "-" if prev.endswith(("\x02", "\xad")) else prev
            if _HYPHEN_END.search(ends) and text[:1].islower():
                if out[-1].endswith("-"):
                    out[-1] = out[-1][:-1]
                    at -= 1
            else:
                out.append("\n\n" if gaps[k - 1] > usual + 0.6 * height else "\n")
                at += len(out[-1])
        starts.append(at)
        out.append(text)
        at += len(text)
    return "".join(out), starts


def _heading_lines(pages: list[_PageText], edges: dict[tuple[int, int], str]) -> dict[tuple[int, int], int]:
    """For a PDF without an outline: {(page index, line index): level} of the lines set in a larger type
    than the body's (1.2 times the size most text is set in, or more), short and with letters; the largest
    size is level 1, up to three levels."""
    chars: dict[float, int] = {}  # font size -> characters set in it, outside headers and footers
    for pi, p in enumerate(pages):
        for li, ln in enumerate(p.lines):
            if not p.no_text and (pi, li) not in edges:
                size = round(ln.size * 2) / 2
                chars[size] = chars.get(size, 0) + len(ln.text)
    if not chars:
        return {}
    body = max(chars, key=lambda size: chars[size])  # the size most of the text is set in
    found: dict[tuple[int, int], float] = {}
    for pi, page in enumerate(pages):
        if page.no_text:
            continue
        for li, line in enumerate(page.lines):
            size = round(line.size * 2) / 2
            words = line.text.split()
            if (
                (pi, li) not in edges
                and size >= 1.2 * body
                and 0 < len(words) <= 12
                and re.search(r"[A-Za-z]{2}", line.text)
            ):
                found[(pi, li)] = size
    sizes = sorted(set(found.values()), reverse=True)[:3]
    return {key: sizes.index(size) + 1 for key, size in found.items() if size in sizes}


def _outline(doc) -> list[tuple[int, str, int]]:
    """(level, title, page index) of the PDF's bookmarks, in order."""
    out = []
    try:
        for mark in doc.get_toc(max_depth=8):
            dest = mark.get_dest()
            index = dest.get_index() if dest is not None else None
            title = mark.get_title()
            if index is not None and title and title.strip():
                out.append((mark.level + 1, title, index))
    except Exception:  # a broken outline costs the sections, never the text
        return []
    return out


def _find_title(text: str, title: str, start: int) -> int | None:
    words = [re.escape(w) for w in re.split(r"[\s\-_]+", normalize(title)) if w]
    if not words:
        return None
    m = re.compile(r"[\s\-_]+".join(words), re.IGNORECASE).search(text, start)
    return m.start() if m else None


def parse_pdf(
    data: bytes, ocr: OcrPolicy, limits: ParseLimits | None = None, budget: OcrBudget | None = None
) -> Parsed:
    limits = limits or ParseLimits()
    state = PageBudgets(ocr, limits, budget or OcrBudget.of(limits))
    doc = _open(data)
    try:
        n = len(doc)
        if n == 0:
            raise ParseError("zero_pages", "the PDF has no pages")
        if n > limits.max_pages:
            raise too_many_pages(n, limits)
        pages: list[_PageText] = []
        for index in range(n):
            page = doc[index]
            try:
                width, height = page.get_size()
                if state.too_large(index + 1, width, height):
                    pages.append(_PageText(index + 1, [], height))
                    continue
                textpage = page.get_textpage()
                try:
                    segments = _segments(textpage)
                finally:
                    textpage.close()
                entry = _PageText(index + 1, _read_order(segments, width), height)
                if not segments and _has_images(page):
                    entry.no_text = True
                    if ocr.enabled:
                        entry.lines = _ocr_lines(state.read(page, index + 1, width, height), height)
                pages.append(entry)
            finally:
                page.close()
        outline = _outline(doc)
        title = (doc.get_metadata_dict().get("Title") or "").strip() or None
    finally:
        doc.close()
    parsed = _assemble(pages, outline, title)
    parsed.skipped = state.skipped
    parsed.ocr_tried = state.tried
    return parsed


def _assemble(pages: list[_PageText], outline: list[tuple[int, str, int]], title: str | None) -> Parsed:
    edges = _edges(pages)
    larger = {} if outline else _heading_lines(pages, edges)
    b = Builder()
    body_start: dict[int, int] = {}
    for pi, page in enumerate(pages):
        b.page(page.number)
        if page.no_text:
            b.no_text_pages.append(page.number)
            if page.lines:
                b.ocr_pages.append(page.number)
        run: list[int] = []  # line indexes of the body lines since the last header or footer

        def flush(run: list[int] = run, pi: int = pi, page: _PageText = page) -> None:
            if not run:
                return
            text, starts = _join_lines([page.lines[li] for li in run])
            at = b.add(text, sep="\n\n" if b.at_page_start else "\n")[0]
            body_start.setdefault(pi, at)
            for li, start in zip(run, starts, strict=True):
                if (pi, li) in larger:
                    b.open_section(larger[(pi, li)], page.lines[li].text, at + start)
            run.clear()

        for li, line in enumerate(page.lines):
            kind = edges.get((pi, li))
            if kind:
                flush()
                b.add(normalize(line.text), sep="\n\n" if b.at_page_start else "\n", kind=kind)
            else:
                run.append(li)
        flush()
    parsed = b.build("pdf", title)
    text = parsed.text
    if not outline:
        return parsed
    heads = []
    for level, head, index in outline:
        if not 0 <= index < len(parsed.layout.pages):
            continue
        page = parsed.layout.pages[index]
        at = _find_title(text[: page.end], head, body_start.get(index, page.start))
        heads.append((level, head, at if at is not None else body_start.get(index, page.start)))
    parsed.layout.sections = sections_from_heads(
        [(lv, " ".join(normalize(t).split()), s) for lv, t, s in heads], len(text)
    )
    return parsed
