"""Where a document's own text starts and ends: e-book headers and footers are not content.

A Project Gutenberg e-book opens with a header (title block, "This ebook is for the use of anyone
anywhere...") and closes with the whole Project Gutenberg licence, between the markers
`*** START OF THE PROJECT GUTENBERG EBOOK ... ***` and `*** END OF THE PROJECT GUTENBERG EBOOK ... ***`.
Extracted as text, the licence became entities ("Project Gutenberg Literary Archive Foundation"), a top
community, and lines of the demo's global answer. The markers are standard across the archive (older
files say "THIS PROJECT GUTENBERG EBOOK" or "E-BOOK"), so they are matched, never guessed.

The document keeps its whole text; chunking covers only the content span, with offsets into the
whole text, so citations still point at the document as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOOK = r"(?:THE|THIS)\s+PROJECT\s+GUTENBERG\s+E-?BOOK"
_START = re.compile(rf"^[ \t]*\*{{3}}[ \t]*START\s+OF\s+{_BOOK}[^\n]*$", re.IGNORECASE | re.MULTILINE)
_END = re.compile(rf"^[ \t]*\*{{3}}[ \t]*END\s+OF\s+{_BOOK}[^\n]*$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class ContentSpan:
    """The document's content is `text[start:end]`; `removed` names what lies outside it."""

    start: int
    end: int
    removed: tuple[str, ...] = ()

    def outside(self, length: int) -> int:
        """Characters of a `length`-character document that are not content."""
        return length - (self.end - self.start)


def content_span(text: str) -> ContentSpan:
    """The span of `text` that is the document's own content (all of it when no marker is found)."""
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
        return ContentSpan(0, len(text))
    return ContentSpan(start, end, tuple(removed))
