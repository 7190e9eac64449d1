"""Sentences with exact offsets, by regular expressions only (no downloaded models): a period after an
abbreviation or an initial ('Mr.', 'T.', 'U.S.', 'p.') or before a lower-case word does not end a
sentence, nor does one inside a parenthesis or bracket that closes soon after ('see pause (p. 164)',
'(see comments (p. 33))': a manual's page references, which once cut a quoted sentence at '(p.'), and a
paragraph break always does. Extraction, descriptions, reports and the offline answers split alike."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words after which a period does not end a sentence.
ABBREVIATIONS = frozenset(
    str.split(
        """
    mr mrs ms dr st mt jr sr prof gen col capt lt sgt rev hon gov sen rep pres fr sq ft no nos vol vols
    fig figs inc ltd co corp dept est approx vs etc al cf ed eds jan feb mar apr jun jul aug sep sept oct
    nov dec p pp
    """
    )
)
# A candidate end: [.!?] runs, closing quotes/brackets, then whitespace.
_END = re.compile(r"[.!?]+['\"’”)\]]*(?=\s)")
_PARAGRAPH = re.compile(r"\n[ \t\r]*\n")  # CRLF too
_WORD_BEFORE = re.compile(r"([\w.]+)\.$")
_NEXT_START = re.compile(r"\s+['\"‘“(\[_]*([A-Z0-9])")

_SPACES = re.compile(r"\s+")
_OPEN, _CLOSE = "([", ")]"
_CLOSES_WITHIN = 80  # characters after a candidate end in which an open bracket must close to hold it


@dataclass(frozen=True)
class Sentence:
    start: int  # character offsets in the text that was split
    end: int
    text: str  # the verbatim slice text[start:end]

    @property
    def clean(self) -> str:
        """Whitespace collapsed: the form used in descriptions."""
        return _SPACES.sub(" ", self.text).strip()


def _is_abbreviation(text: str, end: int) -> bool:
    """Whether the period at text[end-1] closes an abbreviation or an initial ('Mr.', 'T.', 'U.S.')."""
    m = _WORD_BEFORE.search(text[max(0, end - 12) : end])
    if not m:
        return False
    word = m.group(1)
    return word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper()) or "." in word


def _depth(text: str, start: int, end: int, depth: int) -> int:
    """The bracket depth after text[start:end], from `depth` before it (a stray closer counts nothing)."""
    for ch in text[start:end]:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth:
            depth -= 1
    return depth


def split_sentences(text: str) -> list[Sentence]:
    """Sentences with exact offsets. Paragraph breaks always end a sentence."""
    out: list[Sentence] = []
    for para_start, para_end in _paragraphs(text):
        start = scanned = para_start
        depth = 0  # of brackets open in the sentence so far, counted up to `scanned`
        for m in _END.finditer(text, para_start, para_end):
            end = m.end()
            nxt = _NEXT_START.match(text, end, para_end)
            if nxt is None:  # next word lower-case: '... e.g. a cat'
                continue
            if text[m.start()] == "." and m.end() - m.start() == 1 and _is_abbreviation(text, m.start() + 1):
                continue
            depth, scanned = _depth(text, scanned, m.start(), depth), m.start()
            after = text[m.start() : min(m.start() + _CLOSES_WITHIN, para_end)]
            if depth and any(ch in after for ch in _CLOSE):  # a bracket left open holds nothing
                continue
            _append(out, text, start, end)
            start = scanned = end
            depth = 0
        _append(out, text, start, para_end)
    return out


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _PARAGRAPH.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def _append(out: list[Sentence], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        out.append(Sentence(start, end, text[start:end]))
