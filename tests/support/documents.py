"""Small real documents for the parse tests, made with the real libraries: PDFs through PDFium
(pypdfium2: text objects in the standard Helvetica font, or a page rendered to an image and embedded,
which is a page with no text layer), DOCX, PPTX and EPUB through python-docx, python-pptx and zipfile."""

from __future__ import annotations

import ctypes
import io
import zipfile

import pypdfium2 as pdfium
import pypdfium2.raw as c

Line = tuple  # (text, x, y) in points from the bottom-left corner, or (text, x, y, font size)


def _text(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, text: str, x: float, y: float, size: float) -> None:
    obj = c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", ctypes.c_float(size))
    buf = ctypes.create_string_buffer((text + "\x00").encode("utf-16-le"))
    c.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(c.FPDF_WCHAR)))
    c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
    c.FPDFPage_InsertObject(page.raw, obj)


def docx_file(paragraphs: list[str], heading: str | None = None) -> bytes:
    """A DOCX of these paragraphs, under a level-1 heading when one is given (python-docx)."""
    import docx

    document = docx.Document()
    if heading is not None:
        document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def text_pdf(pages: list[list[Line]], size: float = 11, width: float = 612, height: float = 792) -> bytes:
    """A PDF whose pages hold these lines of text (a text layer PDFium reads back)."""
    pdf = pdfium.PdfDocument.new()
    for lines in pages:
        page = pdf.new_page(width, height)
        for text, x, y, *font in lines:
            _text(pdf, page, text, x, y, font[0] if font else size)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def scanned_pdf(source: bytes, scan: set[int], scale: float = 2.0) -> bytes:
    """`source` with the 0-based pages in `scan` replaced by an image of themselves: no text layer, as a
    scanner gives."""
    src = pdfium.PdfDocument(source)
    pdf = pdfium.PdfDocument.new()
    for index in range(len(src)):
        if index not in scan:
            pdf.import_pages(src, [index])
            continue
        width, height = src[index].get_size()
        bitmap = src[index].render(scale=scale, grayscale=True)
        page = pdf.new_page(width, height)
        image = pdfium.PdfImage.new(pdf)
        image.set_bitmap(bitmap)
        image.set_matrix(pdfium.PdfMatrix().scale(width, height))
        page.insert_obj(image)
        page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def pdf_pages(path: str, first: int, last: int) -> bytes:
    """Pages first..last (1-based, inclusive) of a real PDF, as a PDF of their own."""
    src = pdfium.PdfDocument(path)
    pdf = pdfium.PdfDocument.new()
    pdf.import_pages(src, list(range(first - 1, last)))
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def epub(chapters: list[tuple[str, str]], title: str = "A Book", toc: bool = True) -> bytes:
    """An EPUB 3 of (file name, XHTML body) chapters; with `toc`, a nav document titling each."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:'
            'container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{k}" href="{name}" media-type="application/xhtml+xml"/>'
            for k, (name, _) in enumerate(chapters)
        )
        spine = "".join(f'<itemref idref="c{k}"/>' for k in range(len(chapters)))
        nav_item = '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        zf.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
            f"<manifest>{nav_item if toc else ''}{items}</manifest><spine>{spine}</spine></package>",
        )
        for name, body in chapters:
            zf.writestr(
                f"OEBPS/{name}",
                f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>{body}</body></html>',
            )
        if toc:
            links = "".join(
                f'<li><a href="{name}">Chapter {k + 1}</a></li>' for k, (name, _) in enumerate(chapters)
            )
            zf.writestr(
                "OEBPS/nav.xhtml",
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml" '
                'xmlns:epub="http://www.idpf.org/2007/ops"><body><nav epub:type="toc"><ol>'
                f"{links}</ol></nav></body></html>",
            )
    return out.getvalue()


def zip_bomb(member: str = "word/document.xml", size: int = 600_000_000) -> bytes:
    """A zip whose one member inflates to `size` bytes of zeros (a few hundred kB on disk)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open(member, "w", force_zip64=True) as fh:
            chunk = b"\0" * 1_000_000
            for _ in range(size // len(chunk)):
                fh.write(chunk)
    return out.getvalue()


def _raw_pdf(objects: list[bytes], trailer: bytes) -> bytes:
    """A PDF written object by object, with a correct cross-reference table (`SIZE` in the trailer is
    filled in): for the shapes PDFium will not save, an empty page tree and an encryption dictionary."""
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    trailer = trailer.replace(b"SIZE", str(len(objects) + 1).encode())
    return out + b"trailer\n" + trailer + f"\nstartxref\n{xref}\n%%EOF\n".encode()


def zero_page_pdf() -> bytes:
    return _raw_pdf(
        [b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[]/Count 0>>"], b"<</Size SIZE/Root 1 0 R>>"
    )


def encrypted_pdf() -> bytes:
    """A PDF under the standard security handler whose user password is not empty (its O and U entries
    match no empty password): a reader must ask for the password."""
    key = b"<" + b"ab" * 32 + b">"
    file_id = b"<0123456789abcdef0123456789abcdef>"
    return _raw_pdf(
        [
            b"<</Type/Catalog/Pages 2 0 R>>",
            b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
            b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>",
            b"<</Filter/Standard/V 1/R 2/O" + key + b"/U" + key + b"/P -4>>",
        ],
        b"<</Size SIZE/Root 1 0 R/Encrypt 4 0 R/ID[" + file_id + file_id + b"]>>",
    )
