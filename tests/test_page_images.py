"""The cited page itself (issue 71): `GET /v1/namespaces/{ns}/documents/{id}/pages/{n}.png` draws a PDF's
page, cached per document, page and width, and `.../pages/{n}.json` answers the line boxes of a quoted
sentence and of the rest of its passage on it, over the real service on 127.0.0.1.

Three pages of a real manual (libtasn1, from ../shared/data) and a text file are indexed once for the
module into acme's `acme-empty`, from an input folder the service reads the PDF back from."""

from __future__ import annotations

import shutil
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pypdfium2 as pdfium
import pytest

from pipeline.core import schema
from pipeline.core.sentences import split_sentences
from pipeline.index.run import index_folder
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import Layout, Page
from pipeline.service.page_boxes import page_boxes
from pipeline.service.page_source import PdfDocument, SourceUnavailable, read_source
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests.conftest import shared_data
from tests.support.documents import pdf_pages, text_pdf
from tests.support.service_data import KEY_A, KEY_B, ServiceData, auth, offline_settings, serving

NS = "acme-empty"  # acme's, not indexed by `service_data`
PDF = "asn1.pdf"
SENTENCE = "The comments begin with"  # a sentence of page 1 over two lines


@dataclass(frozen=True)
class Paged:
    client: httpx.Client
    storage: Path
    folder: Path  # the namespace's input folder
    pdf_id: str
    txt_id: str
    text: str
    layout: Layout
    units: list[dict[str, Any]]


@pytest.fixture(scope="module")
def paged(service_data: ServiceData, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Paged]:
    inputs = tmp_path_factory.mktemp("page_inputs")
    folder = inputs / NS
    folder.mkdir()
    (folder / PDF).write_bytes(pdf_pages(str(shared_data("pdf_manuals", "libtasn1.pdf")), 5, 7))
    (folder / "notes.txt").write_text(
        "A plain note about the fog over the harbour at dawn.\n", encoding="utf-8"
    )
    settings = offline_settings(service_data, input_root=inputs)
    index_folder(NS, settings=settings, log=lambda _: None)
    store = NamespaceStore(service_data.storage_root, NS).pinned()
    docs = {d["title"]: d for d in store.read_table(schema.DOCUMENTS).to_pylist()}
    pdf = docs[PDF]
    units = [u for u in store.read_table(schema.TEXT_UNITS).to_pylist() if u["document_id"] == pdf["id"]]
    layout = Layout.from_json(pdf["layout"])
    assert layout is not None
    service = QueryService(settings, embedder=service_data.embedder)
    with serving(service) as url, httpx.Client(base_url=url, headers=auth(KEY_A), timeout=60) as client:
        yield Paged(
            client,
            service_data.storage_root,
            folder,
            pdf["id"],
            docs["notes.txt"]["id"],
            pdf["text"],
            layout,
            units,
        )


def _url(paged: Paged, page: int, kind: str = "png", doc: str | None = None) -> str:
    return f"/v1/namespaces/{NS}/documents/{doc or paged.pdf_id}/pages/{page}.{kind}"


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG whose chunks' checksums hold and whose pixels inflate to its size."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, header = 8, b"", b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0] == zlib.crc32(kind + body)
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert (depth, colour) == (8, 2)  # 8-bit RGB
    assert len(zlib.decompress(idat)) == height * (1 + 3 * width)
    return width, height


def test_a_page_renders_as_a_png_of_the_requested_width(paged: Paged) -> None:
    got = paged.client.get(_url(paged, 1), params={"width": 480})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "image/png" and got.headers["x-cache"] == "miss"
    width, height = _png_size(got.content)
    assert width == 480 and abs(height - 480 * 792 / 612) <= 1  # a US Letter page
    default = paged.client.get(_url(paged, 3))
    assert _png_size(default.content)[0] == 1000


def test_a_second_request_is_served_from_the_cache_without_the_pdf(paged: Paged) -> None:
    first = paged.client.get(_url(paged, 2), params={"width": 300})
    assert first.status_code == 200 and first.headers["x-cache"] == "miss"
    cached = paged.storage / NS / "page_images" / paged.pdf_id / "p2-w300.png"
    assert cached.read_bytes() == first.content
    drawn_at = cached.stat().st_mtime_ns
    aside = paged.folder.parent / "aside.pdf"
    shutil.move(paged.folder / PDF, aside)  # the PDF gone: only the cache can answer
    try:
        again = paged.client.get(_url(paged, 2), params={"width": 300})
        assert again.status_code == 200 and again.headers["x-cache"] == "hit"
        assert again.content == first.content and cached.stat().st_mtime_ns == drawn_at
        other = paged.client.get(_url(paged, 2), params={"width": 301})  # not cached: needs the file
        assert other.status_code == 404 and other.json()["error"]["code"] == "source_unavailable"
        (paged.folder / PDF).write_bytes(b"%PDF-1.7 another file altogether")
        changed = paged.client.get(_url(paged, 2), params={"width": 301})
        assert changed.status_code == 409 and changed.json()["error"]["code"] == "source_changed"
    finally:
        shutil.move(aside, paged.folder / PDF)


def test_another_tenants_key_gets_403(paged: Paged) -> None:
    for namespace in (NS, "no-such-namespace"):
        for kind in ("png", "json"):
            path = f"/v1/namespaces/{namespace}/documents/{paged.pdf_id}/pages/1.{kind}"
            refused = paged.client.get(path, headers=auth(KEY_B))
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"


def test_pages_out_of_range_unknown_documents_and_other_formats_are_refused(paged: Paged) -> None:
    for kind in ("png", "json"):
        for page in (0, 4):
            got = paged.client.get(_url(paged, page, kind))
            assert got.status_code == 404 and got.json()["error"]["detail"] == {"pages": 3}, got.text
        assert paged.client.get(_url(paged, 1, kind, doc="nope")).status_code == 404
        not_pdf = paged.client.get(_url(paged, 1, kind, doc=paged.txt_id))
        assert not_pdf.status_code == 415 and not_pdf.json()["error"]["code"] == "not_a_pdf"
        assert "not a PDF" in not_pdf.json()["error"]["message"]
    for width in (199, 2001):
        assert paged.client.get(_url(paged, 1), params={"width": width}).status_code == 422
    assert paged.client.get(_url(paged, 1, "json"), params={"start": 3}).status_code == 422
    too_far = {"start": 0, "end": len(paged.text) + 1}
    assert paged.client.get(_url(paged, 1, "json"), params=too_far).status_code == 422


def _folded(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def _text_in(page: Any, boxes: list[dict[str, float]]) -> str:
    """The page's text inside the union of the boxes (fractions, origin top-left), by PDFium."""
    width, height = page.get_size()
    left, right = min(b["x"] for b in boxes) * width, max(b["x"] + b["w"] for b in boxes) * width
    top, bottom = (
        (1 - min(b["y"] for b in boxes)) * height,
        (1 - max(b["y"] + b["h"] for b in boxes)) * height,
    )
    textpage = page.get_textpage()
    try:
        return textpage.get_text_bounded(left, bottom, right, top)
    finally:
        textpage.close()


def test_a_cited_sentence_is_boxed_inside_the_page_and_its_passage_shaded(paged: Paged) -> None:
    first = paged.layout.pages[0]
    (sentence,) = [
        s for s in split_sentences(paged.text[first.start : first.end]) if s.text.startswith(SENTENCE)
    ]
    start, end = first.start + sentence.start, first.start + sentence.end
    (unit,) = [u for u in paged.units if u["start_char"] <= start and end <= u["end_char"]][:1]
    params = {
        "start": start,
        "end": end,
        "passage_start": unit["start_char"],
        "passage_end": unit["end_char"],
    }
    got = paged.client.get(_url(paged, 1, "json"), params=params)
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["page"], body["page_count"], body["units"], body["text_layer"]) == (1, 3, "fraction", True)
    assert (body["width_pt"], body["height_pt"]) == (612.0, 792.0)
    lit, shaded = body["sentence"], body["passage"]
    assert (lit["start"], lit["end"], lit["located"]) == (start, end, 1.0)
    assert len(lit["boxes"]) == 2, lit  # the sentence runs over two lines: one box each
    for box in lit["boxes"] + shaded["boxes"]:
        assert 0 <= box["x"] < box["x"] + box["w"] <= 1 and 0 <= box["y"] < box["y"] + box["h"] <= 1
    pdf = pdfium.PdfDocument(paged.folder / PDF)
    try:
        inside = _folded(_text_in(pdf[0], lit["boxes"]))
        words = [_folded(w) for w in sentence.text.split()]
        assert all(w in inside for w in words if w), (sentence.text, inside)
        assert sum(b["w"] * b["h"] for b in lit["boxes"]) < 0.05  # the sentence, not the page
        # the rest of the passage is shaded, and the sentence's lines are not among its boxes
        assert shaded["located"] >= 0.99 and len(shaded["boxes"]) > 2
        assert not any(box in shaded["boxes"] for box in lit["boxes"])
    finally:
        pdf.close()


def test_a_running_header_inside_a_passage_is_never_lit(paged: Paged) -> None:
    second = paged.layout.pages[1]
    headers = [r for r in paged.layout.masked if second.start <= r.start < second.end]
    assert headers and "Chapter 2" in paged.text[headers[0].start : headers[0].end]
    params = {"passage_start": second.start, "passage_end": second.end}
    body = paged.client.get(_url(paged, 2, "json"), params=params).json()
    assert body["sentence"] is None and body["passage"]["located"] >= 0.99
    pdf = pdfium.PdfDocument(paged.folder / PDF)
    try:
        for box in body["passage"]["boxes"]:
            assert "Chapter 2" not in _text_in(pdf[1], [box])
    finally:
        pdf.close()


def test_the_pdf_is_read_only_from_inside_the_namespaces_input_folder(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    (inputs / "acme").mkdir(parents=True)
    (inputs / "globex").mkdir()
    secret = inputs / "globex" / "secret.pdf"
    secret.write_bytes(b"%PDF-1.7 another tenant's file")
    (inputs / "acme" / "link.pdf").symlink_to(secret)
    settings = Settings(storage_root=tmp_path / "storage", input_root=inputs)
    for source in ("../globex/secret.pdf", "link.pdf", str(secret), ""):
        doc = PdfDocument("d", "t", "", Layout(), source, secret.stat().st_size)
        with pytest.raises(SourceUnavailable):
            read_source(settings, "acme", doc)


def test_boxes_follow_a_rotated_page() -> None:
    """A page turned a quarter clockwise: its first line, at the top left of the page as drawn, is a
    vertical strip at the right of the page as displayed."""
    line = "Harbour pilots guide the ships past the sand bars at dawn."
    source = pdfium.PdfDocument(text_pdf([[(line, 72, 700)]]))
    try:
        page = source[0]
        page.set_rotation(90)
        layout = Layout(pages=[Page(1, 0, len(line))])
        body = page_boxes(page, line, layout, 1, (0, len(line)), None)
    finally:
        source.close()
    assert (body["width_pt"], body["height_pt"]) == (792.0, 612.0)
    (box,) = body["sentence"]["boxes"]
    assert box["x"] > 0.8 and box["h"] > box["w"] and box["y"] < 0.3


def test_both_routes_are_in_the_openapi_spec(paged: Paged) -> None:
    spec = paged.client.get("/openapi.json").json()
    base = "/v1/namespaces/{namespace}/documents/{document_id}/pages/{page}"
    image = spec["paths"][f"{base}.png"]["get"]
    assert "image/png" in image["responses"]["200"]["content"]
    assert {"403", "404", "409", "415", "422"} <= set(image["responses"])
    assert "width" in {p["name"] for p in image["parameters"]}
    boxes = spec["paths"][f"{base}.json"]["get"]
    assert boxes["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/PageBoxes")
    assert {"start", "end", "passage_start", "passage_end"} <= {p["name"] for p in boxes["parameters"]}
