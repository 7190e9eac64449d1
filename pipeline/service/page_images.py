"""The cited page itself: a PDF document's page rendered as a PNG, and the boxes that light a quoted span on
it, for the web app's source panel and document view.

- `GET /v1/namespaces/{ns}/documents/{id}/pages/{n}.png?width=W`: page n (1-based) drawn by PDFium, W
  pixels wide (200..2000, default 1000; a page more than three times as tall as wide is drawn narrower,
  at most MAX_HEIGHT pixels high). Cached in the namespace's storage per (document, page, width),
  `<ns>/page_images/<document id>/p<n>-w<W>.png`, and never drawn twice: `X-Cache: hit` says the answer
  came from the cache, which is served without reading the PDF again.
- `GET /v1/namespaces/{ns}/documents/{id}/pages/{n}.json?start=&end=&passage_start=&passage_end=`: the
  page's size in points and the line boxes (`pipeline.service.page_boxes`) of the quoted sentence
  [start, end) and of the rest of its passage [passage_start, passage_end), document offsets as a
  citation carries them; boxes are fractions of the displayed page, origin top-left.

The key must cover the namespace (403, whether or not it exists), as for every `/v1/namespaces/` read;
which document, which file and the 404/409/415 answers are `pipeline.service.page_source`'s.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Query
from fastapi.responses import Response
from pydantic import BaseModel, Field

from pipeline.io.store import NamespaceStore
from pipeline.service.auth import Principal
from pipeline.service.caller import Caller
from pipeline.service.errors import InvalidRequest
from pipeline.service.models import ErrorResponse
from pipeline.service.page_boxes import page_boxes
from pipeline.service.page_source import CACHE_FOLDER, pdf_document, read_source, with_page
from pipeline.service.queries import QueryService
from pipeline.service.web import NamespaceParam
from pipeline.settings import Settings

MIN_WIDTH, MAX_WIDTH, DEFAULT_WIDTH = 200, 2000, 1000
MAX_HEIGHT = 3 * MAX_WIDTH  # pixels: a long strip of a page is drawn narrower, never taller than this


class Box(BaseModel):
    x: float = Field(description="left edge, as a fraction of the page's width")
    y: float = Field(description="top edge, as a fraction of the page's height from its top")
    w: float = Field(description="width, as a fraction of the page's width")
    h: float = Field(description="height, as a fraction of the page's height")


class Highlight(BaseModel):
    start: int = Field(description="the span's first character in the document's text")
    end: int = Field(description="the character after it")
    located: float | None = Field(
        description="share (0..1) of the span's letters and digits on this page found on it; null when "
        "none of the span is on this page (masked headers and footers are never counted)"
    )
    boxes: list[Box] = Field(description="one box per line of the span on this page, in reading order")


class CharRange(BaseModel):
    start: int
    end: int


class PageBoxes(BaseModel):
    namespace: str
    document_id: str
    title: str
    page: int = Field(description="1-based, as a viewer counts pages")
    page_count: int
    image: str = Field(description="the page's PNG (add ?width=)")
    units: Literal["fraction"] = "fraction"
    width_pt: float = Field(description="the page's width in points, as displayed (rotation applied)")
    height_pt: float
    text_layer: bool = Field(description="false for a scanned page: nothing can be lit on it")
    page_range: CharRange = Field(description="the page's characters in the document's text")
    sentence: Highlight | None = Field(description="the quoted sentence: lit; null when not asked")
    passage: Highlight | None = Field(
        description="the rest of the passage: lightly shaded; null when not asked"
    )


def _png(rgb: bytes, width: int, height: int, stride: int) -> bytes:
    """An 8-bit RGB PNG of the rows (no filter; zlib does the rest), with no imaging library."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + rgb[y * stride : y * stride + 3 * width] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 6))
        + chunk(b"IEND", b"")
    )


def _render(page: Any, width: int) -> tuple[bytes, int, int, int]:
    page_w, page_h = page.get_size()
    scale = min(width / page_w, MAX_HEIGHT / page_h)
    bitmap = page.render(scale=scale, rev_byteorder=True, draw_annots=True, fill_color=(255, 255, 255, 255))
    return bytes(bitmap.buffer), bitmap.width, bitmap.height, bitmap.stride


def page_png(
    store: NamespaceStore, settings: Settings, document: str, page: int, width: int
) -> tuple[bytes, bool]:
    """Page `page` of the document as a PNG `width` pixels wide, and whether it came from the cache."""
    doc = pdf_document(store, document)
    doc.check_page(page)
    name = f"{CACHE_FOLDER}/{doc.id}/p{page}-w{width}.png"
    if store.has_file(name):
        return store.read_bytes(name), True
    data = read_source(settings, store.namespace, doc)
    rgb, w, h, stride = with_page(data, page, lambda p: _render(p, width))
    png = _png(rgb, w, h, stride)  # outside the PDFium lock: zlib lets other threads run
    store.write_bytes(name, png)  # written aside and renamed: a reader never sees half an image
    return png, False


def _span(start: int | None, end: int | None, length: int, what: str) -> tuple[int, int] | None:
    if start is None and end is None:
        return None
    if start is None or end is None:
        raise InvalidRequest(f"the {what} needs both its start and its end")
    if not 0 <= start <= end <= length:
        raise InvalidRequest(f"the {what} {start}:{end} is not within the document's {length} characters")
    return (start, end)


def page_highlights(
    store: NamespaceStore,
    settings: Settings,
    document: str,
    page: int,
    sentence: tuple[int | None, int | None],
    passage: tuple[int | None, int | None],
) -> dict[str, Any]:
    """The page's size and the line boxes of the sentence and of the rest of the passage on it."""
    doc = pdf_document(store, document)
    doc.check_page(page)
    said = _span(*sentence, len(doc.text), "sentence")
    around = _span(*passage, len(doc.text), "passage")
    data = read_source(settings, store.namespace, doc)
    found = with_page(data, page, lambda p: page_boxes(p, doc.text, doc.layout, page, said, around))
    return {
        "namespace": store.namespace,
        "document_id": doc.id,
        "title": doc.title,
        "page": page,
        "page_count": doc.page_count,
        "image": f"/v1/namespaces/{store.namespace}/documents/{doc.id}/pages/{page}.png",
        "units": "fraction",
        **found,
    }


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        403: "the key does not cover this namespace",
        404: "not_found: no such document or page; source_unavailable: the PDF is not in the namespace's "
        "input folder",
        409: "source_changed: the PDF changed since it was indexed",
        415: "not_a_pdf: the document has no pages to draw",
        422: "a width, page or span out of range",
    }
    return {code: {"model": ErrorResponse, "description": text[code]} for code in codes}


def install_page_images(app: FastAPI, service: QueryService) -> None:
    """The two page routes of a namespace's PDF documents."""
    pages = "/v1/namespaces/{namespace}/documents/{document_id}/pages/{page}"

    def store_for(caller: Principal, namespace: str) -> NamespaceStore:
        return NamespaceStore.from_settings(service.settings, caller.authorize(namespace))

    png_content = {"image/png": {"schema": {"type": "string", "format": "binary"}}}

    @app.get(
        f"{pages}.png",
        tags=["documents"],
        response_class=Response,
        responses={
            200: {"content": png_content, "description": "the page as a PNG; X-Cache: hit or miss"},
            **_errors(403, 404, 409, 415, 422),
        },
    )
    async def page_image(
        namespace: NamespaceParam,
        document_id: str,
        page: int,
        caller: Caller,
        width: Annotated[
            int, Query(ge=MIN_WIDTH, le=MAX_WIDTH, description="the image's width in pixels")
        ] = DEFAULT_WIDTH,
    ) -> Response:
        """Page `page` (1-based) of a PDF document drawn as a PNG `width` pixels wide, cached per
        document, page and width (`X-Cache: hit` when it came from the cache)."""
        store = store_for(caller, namespace)
        png, hit = await asyncio.to_thread(page_png, store, service.settings, document_id, page, width)
        headers = {
            "X-Cache": "hit" if hit else "miss",
            "Cache-Control": "private, max-age=86400",
            "X-Content-Type-Options": "nosniff",
        }
        return Response(png, media_type="image/png", headers=headers)

    @app.get(
        f"{pages}.json",
        tags=["documents"],
        response_model=PageBoxes,
        responses=_errors(403, 404, 409, 415, 422),
    )
    async def page_highlight_boxes(
        namespace: NamespaceParam,
        document_id: str,
        page: int,
        caller: Caller,
        start: Annotated[int | None, Query(ge=0, description="the quoted sentence's first character")] = None,
        end: Annotated[int | None, Query(ge=0, description="the character after the sentence")] = None,
        passage_start: Annotated[int | None, Query(ge=0, description="the passage's first character")] = None,
        passage_end: Annotated[int | None, Query(ge=0, description="the character after the passage")] = None,
    ) -> dict[str, Any]:
        """Page `page` of a PDF document: its size in points and the line boxes (fractions of the page,
        origin top-left) of the quoted sentence [start, end) and of the rest of its passage
        [passage_start, passage_end), offsets of the document's text as citations carry them."""
        store = store_for(caller, namespace)
        sentence, passage = (start, end), (passage_start, passage_end)
        return await asyncio.to_thread(
            page_highlights, store, service.settings, document_id, page, sentence, passage
        )
