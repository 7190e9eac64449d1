"""Hostile documents, made on the fly (none is committed): each is small on disk and costs a parser
without budgets a lot (issue 72). Used by tests/test_parse_bounds.py and bench/bench_hostile.py.

- `lying_docx`: a DOCX whose zip headers declare a 1 kB `word/document.xml` that inflates to 1 GiB of
  zeros. The deflate stream is one 1 MiB block of zeros, compressed once and repeated: a full flush
  resets the compressor, so every block is the same bytes, and the 1 MB file costs a few milliseconds.
- `image_page_pdf`: one image-only page of any size (a 1-pixel image stretched over it): ~600 bytes.
- `page_tree_pdf`: a page tree of `fan ** levels` image-only pages, every leaf the same page object
  and every level the same node, so 10,000 or 1,000,000 pages take about a kilobyte.
- `xml_heavy_docx`: a DOCX whose document.xml holds megabytes of one-word paragraphs.
- `billion_laughs_epub`, `xxe_epub`, `xxe_html`: entity declarations in XML and (X)HTML.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from functools import cache

from tests.support.documents import _raw_pdf, epub

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")


def _zip_raw(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip of (name, deflated bytes, declared size, crc, method) members, headers written by hand so
    they can declare any size."""
    out = bytearray()
    central = bytearray()
    for name, body, declared, crc, method in members:
        raw_name = name.encode()
        offset = len(out)
        out += _LOCAL.pack(b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(body), declared, len(raw_name), 0)
        out += raw_name + body
        central += _CENTRAL.pack(
            b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(body), declared, len(raw_name), 0, 0, 0, 0, 0,
            offset,
        )  # fmt: skip
        central += raw_name
    start = len(out)
    out += central
    out += _END.pack(b"PK\x05\x06", 0, 0, len(members), len(members), len(central), start, 0)
    return bytes(out)


def _member(name: str, data: bytes) -> tuple[str, bytes, int, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return (name, c.compress(data) + c.flush(), len(data), zlib.crc32(data), zipfile.ZIP_DEFLATED)


_CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    b'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    b'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName='
    b'"/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.'
    b'document.main+xml"/></Types>'
)
_RELS = (
    b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
    b'2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
    b'2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)


@cache
def lying_docx(inflated: int = 1 << 30, declared: int = 1000) -> bytes:
    """A DOCX whose document.xml declares `declared` bytes and inflates to `inflated` (a multiple of
    1 MiB) of zeros."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    body = block * (inflated >> 20) + c.flush()
    return _zip_raw(
        [
            _member("[Content_Types].xml", _CONTENT_TYPES),
            _member("_rels/.rels", _RELS),
            ("word/document.xml", body, declared, 0, zipfile.ZIP_DEFLATED),
        ]
    )


def image_page_pdf(points: float) -> bytes:
    """One page of `points` square holding only an image (a single grey pixel stretched over it)."""
    return page_tree_pdf(0, size=points)


def page_tree_pdf(levels: int, fan: int = 10, size: float = 612) -> bytes:
    """A PDF of `fan ** levels` image-only pages of `size` points square: each level of the tree is one
    node whose kids are `fan` times the node below, and every page is the same object (one content
    stream, one image)."""
    objs = [b"<</Type/Catalog/Pages 2 0 R>>"]
    page_no = 2 + max(levels, 1)
    content_no, image_no = page_no + 1, page_no + 2
    if levels == 0:  # one page under the root
        objs.append(f"<</Type/Pages/Kids[{page_no} 0 R]/Count 1>>".encode())
    for k in range(levels):
        num = 2 + k
        child = num + 1 if k < levels - 1 else page_no
        kids = " ".join(f"{child} 0 R" for _ in range(fan))
        parent = f"/Parent {num - 1} 0 R" if k else ""
        objs.append(f"<</Type/Pages{parent}/Kids[{kids}]/Count {fan ** (levels - k)}>>".encode())
    side = f"{size:g}"
    objs.append(
        f"<</Type/Page/Parent {page_no - 1} 0 R/MediaBox[0 0 {side} {side}]/Resources<</XObject<</Im0 "
        f"{image_no} 0 R>>>>/Contents {content_no} 0 R>>".encode()
    )
    stream = f"q {side} 0 0 {side} 0 0 cm /Im0 Do Q".encode()
    objs.append(b"<</Length " + str(len(stream)).encode() + b">>stream\n" + stream + b"\nendstream")
    objs.append(
        b"<</Type/XObject/Subtype/Image/Width 1/Height 1/ColorSpace/DeviceGray/BitsPerComponent 8"
        b"/Length 1>>stream\n\x80\nendstream"
    )
    return _raw_pdf(objs, b"<</Size SIZE/Root 1 0 R>>")


@cache
def xml_heavy_docx(megabytes: int = 9) -> bytes:
    """A real DOCX (python-docx's template) whose body is `megabytes` MB of one-word paragraphs."""
    import docx

    document = docx.Document()
    document.add_paragraph("seed")
    buf = io.BytesIO()
    document.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    para = b"<w:p><w:r><w:t>word</w:t></w:r></w:p>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "word/document.xml":
                head, tail = data.split(b"<w:body>")
                data = head + b"<w:body>" + para * (megabytes * 1_000_000 // len(para)) + tail
            zf.writestr(info.filename, data)
    return out.getvalue()


_LAUGHS = (
    '<!DOCTYPE package [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{k} "{("&lol" + (str(k - 1) if k > 1 else "") + ";") * 10}">' for k in range(1, 10)
    )
    + "]>"
)


def billion_laughs_epub() -> bytes:
    """An EPUB whose package file declares nine levels of ten-fold entities (10^9 'lol's) and uses the
    last one in its title."""
    data = epub([("c1.xhtml", "<h1>One</h1><p>A chapter.</p>")])
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "OEBPS/content.opf":
                body = body.replace(b'<?xml version="1.0"?>', b'<?xml version="1.0"?>' + _LAUGHS.encode())
                body = body.replace(b"<dc:title>A Book</dc:title>", b"<dc:title>&lol9;</dc:title>")
            zf.writestr(info, body)
    return out.getvalue()


_XXE = '<!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'


def xxe_html() -> bytes:
    return (
        f'<?xml version="1.0"?>{_XXE}<html><head><title>Notes</title></head><body><h1>Notes</h1>'
        "<p>Before &xxe; after.</p></body></html>"
    ).encode()


def xxe_epub() -> bytes:
    """An EPUB whose one chapter declares an external entity and uses it."""
    data = epub([("c1.xhtml", "<h1>One</h1><p>Before &xxe; after.</p>")])
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "OEBPS/c1.xhtml":
                body = body.replace(b'<?xml version="1.0"?>', b'<?xml version="1.0"?>' + _XXE.encode())
            zf.writestr(info, body)
    return out.getvalue()
