"""Where a document offset falls in its parsed layout (issue 58): the page range and the section path of a
range of characters.

Indexing gives each text unit its pages and section with these, and query time each cited passage and
page; the layout is `pipeline.parse.layout.Layout`, read here only through what `Sectioned` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

SECTION_SEPARATOR = " › "


class Sectioned(Protocol):
    """What a layout offers here: its sections, the section at an offset, the pages of a range."""

    @property
    def sections(self) -> Sequence[Any]: ...

    def section_at(self, offset: int) -> Any: ...

    def page_span(self, start: int, end: int) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class Location:
    page_start: int | None
    page_end: int | None
    section: str | None


def section_path(layout: Sectioned | None, offset: int) -> str | None:
    """The path of the innermost section holding `offset`, titles joined by " › "."""
    found = layout.section_at(offset) if layout else None
    return SECTION_SEPARATOR.join(found.path) if found else None


def locate(layout: Sectioned | None, start: int, end: int) -> Location:
    """Pages and section of the characters [start, end): the section is the one the range starts in, or,
    for a range that starts before any section (a Markdown heading's "# " marker, a preface), the first
    one that opens inside it."""
    if layout is None:
        return Location(None, None, None)
    pages = layout.page_span(start, end)
    section = section_path(layout, start)
    if section is None:
        opening = min((s.start for s in layout.sections if start <= s.start < end), default=None)
        section = section_path(layout, opening) if opening is not None else None
    return Location(pages[0] if pages else None, pages[1] if pages else None, section)
