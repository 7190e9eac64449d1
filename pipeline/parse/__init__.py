"""Real documents in: a file's bytes to document text plus a layout map (`pipeline.parse.layout`).

One module per format (`pdf`, `office` for DOCX and PPTX, `html`, `epub`, `markup` for Markdown and
reStructuredText headings); `parse_bytes` is the dispatcher: it sniffs the bytes before it believes the
suffix (`sniff`), refuses zip bombs before inflating, parses, and reports pages with no text layer.
A file that gives no document raises `ParseError` with its ingest_errors status.
"""

from __future__ import annotations

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

__all__ = ["FORMATS", "Layout", "OcrPolicy", "Page", "ParseError", "Parsed", "Section", "parse_bytes"]


def parse_bytes(data: bytes, fmt: str, ocr: OcrPolicy | None = None, text: str | None = None) -> Parsed:
    """Parse one file's bytes as `fmt` (a value of FORMATS). Markdown and reStructuredText take the
    already decoded `text` (the ingest's decoding rules apply to them as to any text file)."""
    from pipeline.parse.sniff import check_kind, check_zip

    if fmt in ("md", "rst"):
        from pipeline.parse.markup import markup_layout

        return markup_layout(text if text is not None else data.decode("utf-8-sig"), fmt)
    if not data:
        raise ParseError("empty", "file is empty (0 bytes)")
    check_kind(fmt, data)
    if fmt in ("docx", "pptx", "epub"):
        check_zip(data)
    if fmt == "pdf":
        from pipeline.parse.pdf import parse_pdf

        parsed = parse_pdf(data, ocr or OcrPolicy.from_env())
    elif fmt == "docx":
        from pipeline.parse.office import parse_docx

        parsed = parse_docx(data)
    elif fmt == "pptx":
        from pipeline.parse.office import parse_pptx

        parsed = parse_pptx(data)
    elif fmt == "epub":
        from pipeline.parse.epub import parse_epub

        parsed = parse_epub(data)
    elif fmt == "html":
        from pipeline.parse.html import parse_html

        parsed = parse_html(data)
    else:
        raise ParseError("unsupported", f"no parser for {fmt!r}")
    return _checked(parsed)


def _checked(parsed: Parsed) -> Parsed:
    """No text layer on some pages: a warning row each (with the page numbers); on every page and no
    OCR text: the document is refused, never kept silently empty."""
    layout = parsed.layout
    unread = [n for n in layout.no_text_pages if n not in layout.ocr_pages]
    for n in unread:
        parsed.warnings.append(
            (
                "no_text_layer",
                f"page {n} has no text layer and was not OCR'd (PIPELINE_OCR=off, or tesseract is not "
                "installed: `make` installs it)",
            )
        )
    if not parsed.text.strip():
        reason = (
            f"no page has a text layer (pages {', '.join(map(str, unread))}) and none was OCR'd"
            if unread
            else "no text in the document"
        )
        raise ParseError("no_text_layer" if unread else "empty", reason)
    return parsed
