"""What an answer quotes that is not a document's prose (issue 71): running headers and footers, page
numbers, and table-of-contents or index lines. bench/bench_quoted_prose.py counts them and
tests/test_quoted_prose.py asserts there are none.

The lines are found from the documents table of an index (its text and layout map), never from a rule
of the pipeline the issue changes:
- header and footer lines: the lines the parse masked as one (`layout.masked`), bare page numbers left
  out (a number is everywhere); one with a digit in it ('Chapter 4: Function reference 9') is matched
  anywhere, one without ('Shared MIME-info Database', which the prose names too) only next to a number
  (the page number printed beside it) or as the whole sentence;
- contents lines: the lines of a contents block (a page, or a paragraph of a file with no pages, in the
  first 15% of its document, most of whose lines end with a page number after a tab, a wide gap or a dot
  leader), and any dot leader followed by a number (an index's lines, wherever they are);
- front matter: everything before the end of the document's last contents block; an answer's first
  citation is in it when most of what it highlights (its first quote, else its passage) is.
Answer sentences are split here too (citation markers taken out, each line split at `. `, `! `, `? `
before a capital), so that a change to `pipeline.core.sentences` moves no count.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

_CITATION = re.compile(r"\[(?:Data|Communities|Community ID|Sources|Reports|Entities)\b[^\]]*\]")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+\.)\s+")
_LEADER = re.compile(r"(?:\.[ \t]?){3,}")
_LEADER_NUMBER = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)\b")
_TOC_LINE = re.compile(r"[A-Za-z].*?(?:\t|[ ]{2,}|(?:\.[ \t]?){3,}[ \t]*)(?:\d+|[ivxlc]+)\s*$")
_CUT_IN_BRACKETS = re.compile(r"\(p{1,2}\.$")  # "... see pause mouse close (p." cut from its page
_PARAGRAPH = re.compile(r"\n[ \t\r]*\n")
_FRONT_SHARE = 0.15  # contents blocks are looked for in this share of a document
KINDS = ("header_footer", "toc", "quotes_boilerplate", "truncated_at_citation")


def flat(text: str) -> str:
    """Dot leaders as one '...', whitespace collapsed: the form an answer's text has."""
    return " ".join(_LEADER.sub(" ... ", text).split())


def answer_sentences(answer: str) -> list[str]:
    out = []
    for line in answer.splitlines():
        line = _BULLET.sub("", _CITATION.sub(" ", line)).strip()
        out.extend(s.strip() for s in _SPLIT.split(line) if len(s.strip()) > 3)
    return out


def _spans(text: str, pattern: re.Pattern, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    end = len(text) if end is None else end
    spans, at = [], start
    for m in pattern.finditer(text, start, end):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, end))
    return [(s, e) for s, e in spans if text[s:e].strip()]


class DocumentLines:
    """One document's header and footer lines, contents lines and front-matter end."""

    def __init__(self, text: str, layout: str | None) -> None:
        parsed = json.loads(layout) if layout else {}
        masked = parsed.get("masked", ())
        self.masked = [(s, e) for s, e, _ in masked]
        self.headers = {flat(text[s:e]) for s, e, kind in masked if kind != "page_number"}
        self.headers = {h for h in self.headers if len(h.split()) >= 2}
        pages = [(p[1], p[2]) for p in parsed.get("pages") or ()]
        self.toc_spans: list[tuple[int, int]] = []
        for s, e in pages or _spans(text, _PARAGRAPH):
            if s > _FRONT_SHARE * len(text):
                break
            lines = _spans(text, re.compile("\n"), s, e)
            hits = [(a, b) for a, b in lines if _TOC_LINE.search(text[a:b])]
            if hits and len(hits) * 2 >= len(lines) and (len(hits) >= 3 or not pages):
                self.toc_spans.extend(hits)
        self.toc_lines = {flat(text[a:b]) for a, b in self.toc_spans} - {""}
        self.toc_lines = {t for t in self.toc_lines if len(t) >= 6}
        self.front_end = max((b for _, b in self.toc_spans), default=0)

    def boilerplate_overlap(self, start: int, end: int) -> bool:
        return any(s < end and start < e for s, e in (*self.masked, *self.toc_spans))


def documents_lines(documents: Iterable[dict[str, Any]]) -> dict[str, DocumentLines]:
    """{document id: its lines} from rows of a documents table (id, text, layout)."""
    return {d["id"]: DocumentLines(d.get("text") or "", d.get("layout")) for d in documents}


def _header_patterns(headers: set[str]) -> list[re.Pattern]:
    out = []
    for h in sorted(headers):
        q = re.escape(h)
        out.append(re.compile(q if re.search(r"\d", h) else rf"\b\d+\s+{q}|{q}\s+\d+\b|^{q}$"))
    return out


class QuotedProse:
    """Counts, over answers, of what they quote that is not prose (the module docstring's rules)."""

    def __init__(self, docs: dict[str, DocumentLines]) -> None:
        self.docs = docs
        self.headers = _header_patterns(set().union(*(d.headers for d in docs.values())))
        self.toc_lines = set().union(*(d.toc_lines for d in docs.values()))
        self.counts: Counter = Counter()
        self.examples: dict[str, list[str]] = {k: [] for k in KINDS}

    def _hit(self, kind: str, text: str) -> None:
        self.counts[kind] += 1
        self.examples[kind].append(text[:200])

    def add(self, result: Any) -> None:
        """Count one query result (any mode's: `answer`, and `quotes` and `citations` where it has them)."""
        self.counts["answers"] += 1
        for sentence in answer_sentences(getattr(result, "answer", "") or ""):
            self.counts["sentences"] += 1
            text = flat(sentence)
            if any(h.search(text) for h in self.headers):
                self._hit("header_footer", sentence)
            if _LEADER_NUMBER.search(sentence) or any(t in text for t in self.toc_lines):
                self._hit("toc", sentence)
            if _CUT_IN_BRACKETS.search(sentence):
                self._hit("truncated_at_citation", sentence[-120:])
        for q in getattr(result, "quotes", None) or []:
            self.counts["quotes"] += 1
            doc = self.docs.get(q.get("document_id"))
            start, end = q.get("start_char"), q.get("end_char")
            if doc is not None and start is not None and doc.boilerplate_overlap(start, end):
                self._hit("quotes_boilerplate", q.get("text") or "")
        first = _first_cited(result)
        if first is not None and (doc := self.docs.get(first["document_id"])) is not None:
            start, end = first["start_char"], first["end_char"]
            if end > start and min(end, doc.front_end) - start > (end - start) / 2:
                self.counts["first_citation_front"] += 1

    def figures(self) -> dict[str, Any]:
        keys = ("answers", "sentences", "header_footer", "toc", "quotes", "quotes_boilerplate")
        out: dict[str, Any] = {
            k: self.counts[k] for k in (*keys, "first_citation_front", "truncated_at_citation")
        }
        out["examples"] = {k: v[:3] for k, v in self.examples.items() if v}
        return out


def _first_cited(result: Any) -> dict[str, Any] | None:
    """What the answer's first citation highlights: its first quote (the sentence, with offsets), else
    the first cited passage with offsets (a plain-text document's citations carry no quotes)."""
    quotes = [q for q in getattr(result, "quotes", None) or [] if q.get("start_char") is not None]
    if quotes:
        return quotes[0]
    for c in getattr(result, "citations", None) or []:
        if c.get("start_char") is not None and c.get("document_id"):
            return c
    return None
