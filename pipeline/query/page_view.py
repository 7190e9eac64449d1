"""Open a citation: one page of a parsed document, with a cited span marked (issue 58).

`pipeline show --namespace NS --document R-intro.pdf --page 37 --span 20077:20180` prints what a reader
would check a citation against: the page's text as indexed (running headers included, since offsets
count them), the part of the span on this page between `⟦` and `⟧`. The web page of a later issue calls
the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.core import schema
from pipeline.core.sections import section_path
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import Layout

OPEN, CLOSE = "⟦", "⟧"


class PageViewError(ValueError):
    """A document, page or span that cannot be shown, said in one line."""


@dataclass(frozen=True)
class PageView:
    document: str
    page: int
    pages: int  # the document's page count
    start: int  # the page's characters in the document text
    end: int
    section: str | None  # the section path the page starts in
    text: str  # the page's text, the span marked
    span: tuple[int, int] | None  # the marked part, clipped to the page

    def render(self) -> str:
        where = f" · {self.section}" if self.section else ""
        head = f"{self.document} p. {self.page} of {self.pages}{where} [{self.start}:{self.end}]"
        return f"{head}\n\n{self.text.rstrip()}\n"


def parse_span(value: str) -> tuple[int, int]:
    """'START:END' as a pair of offsets; PageViewError otherwise."""
    try:
        start, end = (int(v) for v in value.split(":"))
    except ValueError:
        raise PageViewError(f"--span is START:END in document characters, got {value!r}") from None
    if start < 0 or end < start:
        raise PageViewError(f"--span {value}: START must be >= 0 and END >= START")
    return start, end


def page_view(
    store: NamespaceStore, document: str, page: int, span: tuple[int, int] | None = None
) -> PageView:
    """Page `page` (1-based) of the document titled (or with id) `document`, the span marked."""
    if not store.has_table(schema.DOCUMENTS):
        raise PageViewError(f"namespace {store.namespace!r} has no documents table: index it first")
    columns = ["id", "title", "text"] + (
        ["layout"] if "layout" in store.read_schema(schema.DOCUMENTS).names else []
    )
    rows = store.read_table(schema.DOCUMENTS, columns=columns).to_pylist()
    found = [r for r in rows if document in (r["title"], r["id"])]
    if not found:
        raise PageViewError(f"no document {document!r} in namespace {store.namespace!r}")
    doc = found[0]
    layout = Layout.from_json(doc.get("layout"))
    if layout is None or not layout.pages:
        raise PageViewError(f"{doc['title']} has no pages (only PDF pages and slides are numbered)")
    by_number = {p.number: p for p in layout.pages}
    if page not in by_number:
        raise PageViewError(f"{doc['title']} has pages 1-{layout.pages[-1].number}, not {page}")
    p = by_number[page]
    text = doc["text"][p.start : p.end]
    marked = None
    if span is not None:
        lo, hi = max(span[0], p.start), min(span[1], p.end)
        if lo >= hi:
            raise PageViewError(f"span {span[0]}:{span[1]} is not on page {page} ({p.start}:{p.end})")
        marked = (lo, hi)
        a, b = lo - p.start, hi - p.start
        text = text[:a] + OPEN + text[a:b] + CLOSE + text[b:]
    return PageView(
        document=doc["title"],
        page=page,
        pages=len(layout.pages),
        start=p.start,
        end=p.end,
        section=section_path(layout, p.start),
        text=text,
        span=marked,
    )
