"""The heading structure of Markdown and reStructuredText. The text is kept exactly as the file says (a
Markdown document's id, the sha256 of its text, is the one it had before sections existed); only the
sections are found:
- Markdown: ATX headings (`## Title`) and setext ones (a line underlined by `===` or `---`), never
  inside a fenced code block;
- reStructuredText: a title underlined (and optionally overlined) by one punctuation character at least
  as long as it; levels in the order the styles first appear, as docutils assigns them.
"""

from __future__ import annotations

import re

from pipeline.parse.layout import Layout, Parsed, sections_from_heads

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")


def _lines(text: str) -> list[tuple[int, str]]:
    out, at = [], 0
    for line in text.splitlines(keepends=True):
        out.append((at, line.rstrip("\r\n")))
        at += len(line)
    return out


def markdown_heads(text: str) -> list[tuple[int, str, int]]:
    heads = []
    fenced = None
    lines = _lines(text)
    for k, (at, line) in enumerate(lines):
        fence = _FENCE.match(line)
        if fence:
            fenced = None if fenced == fence.group(1) else (fenced or fence.group(1))
            continue
        if fenced:
            continue
        atx = _ATX.match(line)
        if atx:
            heads.append((len(atx.group(1)), atx.group(2).strip(), at + line.index(atx.group(2))))
            continue
        if k + 1 < len(lines) and line.strip() and not line.startswith((" " * 4, "\t")):
            under = _SETEXT.match(lines[k + 1][1])
            prev_blank = k == 0 or not lines[k - 1][1].strip()
            if under and prev_blank:
                heads.append(
                    (1 if under.group(1)[0] == "=" else 2, line.strip(), at + len(line) - len(line.lstrip()))
                )
    return heads


def rst_heads(text: str) -> list[tuple[int, str, int]]:
    heads = []
    styles: list[tuple[str, bool]] = []
    lines = _lines(text)
    k = 0
    while k + 1 < len(lines):
        at, line = lines[k]
        under = _RST_ADORN.match(lines[k + 1][1])
        title = line.strip()
        if under and title and not _RST_ADORN.match(line) and len(lines[k + 1][1].rstrip()) >= len(title):
            over = k > 0 and lines[k - 1][1].strip() == lines[k + 1][1].strip()
            style = (under.group(1), over)
            if style not in styles:
                styles.append(style)
            heads.append((styles.index(style) + 1, title, at + len(line) - len(line.lstrip())))
            k += 2
            continue
        k += 1
    return heads


def markup_layout(text: str, fmt: str) -> Parsed:
    heads = rst_heads(text) if fmt == "rst" else markdown_heads(text)
    return Parsed(text, Layout(sections=sections_from_heads(heads, len(text))), fmt)
