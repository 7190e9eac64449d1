"""An answer's citations as a chat client shows them: `[n]` markers in the text and a numbered sources list.

The modes cite as GraphRAG does, `[Data: Sources (3); Reports (7, +more)]` (local, DRIFT, basic, lazy)
or `[Community ID: 7]` / `[Communities: 7, 9]` (global). A chat front end renders neither, so each such
block becomes the markers of the rows it names, numbered in the order the text first names them, so
that a streamed answer can be numbered as it is written and an unstreamed one reads the same. Each
marker's source is the result's citation of that row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pipeline.query.answer.answer_context import LABELS

# `[Data: ...]` or global's `[Community ID: 7]` / `[Communities: 7, 9, +more]`
_BLOCK = re.compile(
    r"\[(?:Data:\s*(?P<data>[^\]]*)|(?:Community IDs?|Communities):\s*(?P<communities>[-\d,\s+more]*))\]",
    re.IGNORECASE,
)
_PART = re.compile(r"([A-Za-z]+)\s*\(([^)]*)\)")
_SECTION_OF: dict[str, str] = {
    **{label.lower(): section for section, label in LABELS.items()},
    **{label.lower().removesuffix("s"): section for section, label in LABELS.items()},
    "relationship": "relationships",
    "entity": "entities",
}
# A block is at most this long; an opening bracket that has not closed by then is ordinary text.
MAX_BLOCK_CHARS = 400
SOURCES_HEADING = "\n\nSources:\n"  # before the sources list appended to an answer
Key = tuple[str, int]


def key_of(citation: dict[str, Any]) -> Key | None:
    """The row a citation names, as an answer's block names it: (section, id)."""
    section, ident = citation.get("section"), citation.get("id", citation.get("community"))
    if not isinstance(section, str) or isinstance(ident, bool) or not isinstance(ident, int):
        return None
    return section, ident


def block_keys(match: re.Match[str]) -> list[Key]:
    """The rows one citation block names, in the order written."""
    keys: list[Key] = []
    if match.group("communities") is not None:
        return [("reports", int(t)) for t in re.findall(r"-?\d+", match.group("communities"))]
    for label, ids in _PART.findall(match.group("data") or ""):
        section = _SECTION_OF.get(label.lower())
        if section is not None:
            keys.extend((section, int(t)) for t in re.findall(r"-?\d+", ids))
    return keys


class Markers:
    """The markers of one answer: each row gets the next number the first time a block names it."""

    def __init__(self) -> None:
        self.by_key: dict[Key, int] = {}

    def replace(self, match: re.Match[str]) -> str:
        found: dict[int, None] = {}
        for key in block_keys(match):
            found.setdefault(self.by_key.setdefault(key, len(self.by_key) + 1))
        return "".join(f"[{n}]" for n in found)

    def sources(self, citations: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The response's `sources`, one per marker in order: the result's citation of that row (without
        the result's own numbering) and a one-line `label` for a person. A row the result does not
        list (a model's citation of a row it was never given, or one cut by the service's output
        bounds) is `resolved: false`, labelled as the answer wrote it."""
        cited = {key_of(c): c for c in citations}
        out = []
        for key, marker in self.by_key.items():
            citation = cited.get(key)
            if citation is None:
                entry: dict[str, Any] = {"section": key[0], "id": key[1], "resolved": False}
            else:
                entry = {k: v for k, v in citation.items() if k != "marker"}
            # one line each: a title may hold line breaks, which would break the appended list
            out.append({"marker": marker, **entry, "label": " ".join(label_of(entry).split())})
        return out


def with_markers(text: str, markers: Markers) -> str:
    """`text` with each citation block replaced by the markers of the rows it names."""
    return _BLOCK.sub(markers.replace, text)


class MarkerStream:
    """`with_markers` over text that arrives in pieces, where a block may be cut between two pieces:
    text is held back from an unclosed `[` until it closes, or is clearly no block."""

    def __init__(self) -> None:
        self.markers = Markers()
        self.pending = ""

    def feed(self, piece: str) -> str:
        """What of the text so far can be sent now."""
        self.pending += piece
        out: list[str] = []
        while self.pending:
            start = self.pending.find("[")
            if start < 0:
                out.append(self.pending)
                self.pending = ""
                break
            out.append(self.pending[:start])
            self.pending = self.pending[start:]
            match = _BLOCK.match(self.pending)
            if match is not None:
                out.append(self.markers.replace(match))
                self.pending = self.pending[match.end() :]
                continue
            unclosed = "]" not in self.pending
            if unclosed and len(self.pending) < MAX_BLOCK_CHARS and _could_open(self.pending):
                break  # may still become a block
            out.append(self.pending[0])  # not a block: send its bracket and look again after it
            self.pending = self.pending[1:]
        return "".join(out)

    def finish(self) -> str:
        """The rest, once the text is complete."""
        rest, self.pending = self.pending, ""
        return with_markers(rest, self.markers)


_OPENINGS = ("[data:", "[community id", "[communities:")


def _could_open(text: str) -> bool:
    """Whether an unclosed `[...` may still grow into a citation block."""
    head = text[: len("[community ids:")].lower()
    return any(o.startswith(head) or head.startswith(o) for o in _OPENINGS)


def label_of(citation: dict[str, Any]) -> str:
    """What a reader needs to find the source: the document, its page or section, or the community."""
    section = citation.get("section")
    if citation.get("resolved") is False:
        return f"{LABELS.get(section, section)} ({citation.get('id')})"  # as the answer wrote it
    if section == "reports":
        title = citation.get("title")
        return f"Community {citation.get('community', citation.get('id'))}" + (f": {title}" if title else "")
    if section == "entities":
        return f"Entity: {citation.get('title') or citation.get('entity_id')}"
    if section == "relationships":
        return f"Relationship: {citation.get('source')} → {citation.get('target')}"
    parts = [str(citation.get("document_title") or citation.get("document_id") or "document")]
    first, last = citation.get("page_start"), citation.get("page_end")
    if first is not None:
        parts.append(f"p. {first}" if last in (None, first) else f"pp. {first}–{last}")
    if citation.get("document_section"):
        parts.append(str(citation["document_section"]))
    start, end = citation.get("start_char"), citation.get("end_char")
    if first is None and start is not None and end is not None:
        parts.append(f"characters {start}–{end}")
    return ", ".join(parts)


def sources_text(sources: list[dict[str, Any]]) -> str:
    """The sources list appended to the answer's text (empty when nothing is cited)."""
    if not sources:
        return ""
    return SOURCES_HEADING + "\n".join(f"[{s['marker']}] {s['label']}" for s in sources)
