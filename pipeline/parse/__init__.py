"""Real documents in: a file's bytes to document text plus a layout map (`pipeline.parse.layout`).

One module per format (`pdf`, `office` for DOCX and PPTX, `html`, `epub`, `markup` for Markdown and
reStructuredText headings); `parse_bytes` is the dispatcher: it sniffs the bytes before it believes the
suffix (`sniff`), inflates zip-based files under a counted budget (`zipread`), refuses XML that declares
entities (`safexml`), parses under the page and OCR budgets of `bounds.ParseLimits`, and reports pages
with no text layer. A file that gives no document raises `ParseError` with its ingest_errors status.
The ingest runs it in a bounded worker process (`worker`).
"""

from __future__ import annotations

from pipeline.parse.bounds import OcrBudget, ParseLimits, page_list
from pipeline.parse.layout import Layout, Page, Parsed, ParseError, Section
from pipeline.parse.ocr import OcrPolicy

# suffix -> format
FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".epub": "epub",
    ".md": "md",
    ".markdown": "md",
    ".rst": "rst",
}
BINARY_FORMATS = {"pdf", "docx", "pptx", "epub", "html"}

__all__ = [
    "FORMATS",
    "Layout",
    "OcrBudget",
    "OcrPolicy",
    "Page",
    "ParseError",
    "ParseLimits",
    "Parsed",
    "Section",
    "parse_bytes",
]


def parse_bytes(
    data: bytes,
    fmt: str,
    ocr: OcrPolicy | None = None,
    text: str | None = None,
    limits: ParseLimits | None = None,
    ocr_budget: OcrBudget | None = None,
) -> Parsed:
    """Parse one file's bytes as `fmt` (a value of FORMATS) under `limits` (the defaults when None).
    Markdown and reStructuredText take the already decoded `text` (the ingest's decoding rules apply to
    them as to any text file). `ocr_budget` is what this document may spend on OCR (its own from `limits`
    when None); the caller reads what was spent from it, whether the parse succeeds or not."""
    from pipeline.parse.sniff import check_kind
    from pipeline.parse.zipread import read_zip

    if fmt in ("md", "rst"):
        from pipeline.parse.markup import markup_layout

        return markup_layout(text if text is not None else data.decode("utf-8-sig"), fmt)
    if not data:
        raise ParseError("empty", "file is empty (0 bytes)")
    check_kind(fmt, data)
    limits = limits or ParseLimits()
    members = read_zip(data, limits, keep=fmt == "epub") if fmt in ("docx", "pptx", "epub") else {}
    if fmt == "pdf":
        from pipeline.parse.pdf import parse_pdf

        parsed = parse_pdf(data, ocr or OcrPolicy.from_env(), limits, ocr_budget or OcrBudget.of(limits))
    elif fmt == "docx":
        from pipeline.parse.office import parse_docx

        parsed = parse_docx(data)
    elif fmt == "pptx":
        from pipeline.parse.office import parse_pptx

        parsed = parse_pptx(data)
    elif fmt == "epub":
        from pipeline.parse.epub import parse_epub

        parsed = parse_epub(members)
    elif fmt == "html":
        from pipeline.parse.html import parse_html

        parsed = parse_html(data)
    else:
        raise ParseError("unsupported", f"no parser for {fmt!r}")
    return _checked(parsed)


def _checked(parsed: Parsed) -> Parsed:
    """Pages left unread: a warning row each for no text layer (with the page numbers), one row per
    budget that skipped pages (`page_too_large`, `ocr_budget`); a document with no text at all is
    refused, never kept silently empty, with the budget's status when a budget is why."""
    layout = parsed.layout
    skipped = parsed.skipped
    tried = set(parsed.ocr_tried)
    unread = [n for n in layout.no_text_pages if n not in layout.ocr_pages and n not in skipped]
    for n in unread:
        parsed.warnings.append(
            (
                "no_text_layer",
                f"page {n} has no text layer and OCR read no text on it"
                if n in tried
                else f"page {n} has no text layer and was not OCR'd (PIPELINE_OCR=off, or tesseract is not "
                "installed: `make` installs it)",
            )
        )
    by_status: dict[str, list[int]] = {}
    for n, (status, _) in sorted(skipped.items()):
        by_status.setdefault(status, []).append(n)
    for status, pages in by_status.items():
        first = skipped[pages[0]][1]
        parsed.warnings.append(
            (status, f"{'page' if len(pages) == 1 else 'pages'} {page_list(pages)} not read: {first}")
        )
    if not parsed.text.strip():
        if by_status:
            status = max(by_status, key=lambda st: len(by_status[st]))
            pages = by_status[status]
            raise ParseError(
                status,
                f"no page was read; {'page' if len(pages) == 1 else 'pages'} {page_list(pages)}: "
                f"{skipped[pages[0]][1]}",
            )
        reason = (
            f"no page has a text layer (pages {', '.join(map(str, unread))}) and "
            + ("OCR read no text" if tried else "none was OCR'd")
            if unread
            else "no text in the document"
        )
        raise ParseError("no_text_layer" if unread else "empty", reason)
    return parsed
