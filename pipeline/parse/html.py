"""HTML (and the XHTML chapters of an EPUB) through lxml: block elements become paragraphs, `h1`–`h6`
sections, a table row one tab-separated line, an image its alt text, a figure caption its own line.
Scripts, styles and the head are dropped; site navigation (`nav`) and the page's own header and footer
are masked ranges, as a PDF's running headers are. lxml is already what python-docx and python-pptx parse with,
so HTML needs no parser of its own (selectolax was measured too: docs/parsing.md). A page that declares
XML entities is refused before it is parsed (`pipeline.parse.safexml`): the HTML parser would leave the
declarations and the references as text.
"""

from __future__ import annotations

import re

from pipeline.parse.layout import Builder, Parsed, ParseError, normalize
from pipeline.parse.safexml import check_entities

_DROP = {"script", "style", "noscript", "template", "head", "svg", "math", "button", "select"}
_BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "blockquote", "pre",
    "ul", "ol", "li", "dl", "dt", "dd", "figure", "figcaption", "caption", "address", "hr", "br",
    "form", "fieldset", "details", "summary", "body", "html",
}  # fmt: skip
_HEADING = re.compile(r"^h([1-6])$")
_SPACE = re.compile(r"[ \t\r\f\v]+")


def _tag(el) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1].lower()


def _gather(el) -> str:
    tag = _tag(el)
    if tag in _DROP or not tag:  # a comment or processing instruction has no text of the page
        return ""
    parts = [f" {el.get('alt')} " if tag == "img" and el.get("alt") else "", el.text or ""]
    for child in el:
        parts.append(_gather(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _chrome(el, tag: str) -> str | None:
    """The mask kind of a site's navigation, and of a page's own header and footer (not an article's,
    which hold its title and byline): kept in the text, never extracted nor quoted."""
    role = (el.get("role") or "").lower()
    if tag == "nav" or role == "navigation":
        return "navigation"
    page_level = not any(_tag(a) in ("article", "main") for a in el.iterancestors())
    if (tag in ("header", "footer") or role in ("banner", "contentinfo")) and page_level:
        return "page_footer" if tag == "footer" or role == "contentinfo" else "page_header"
    return None


class _Walker:
    def __init__(self, builder: Builder, level_shift: int = 0, skip_title: str | None = None) -> None:
        self.b = builder
        self.buf: list[str] = []
        self.shift = level_shift
        self.skip_title = skip_title
        self.title: str | None = None
        self.mask: str | None = None  # inside site navigation or a page's own header or footer

    def add(self, text: str) -> None:
        self.b.add(text, kind=self.mask)

    def flush(self) -> None:
        text = normalize("".join(self.buf))
        lines = [_SPACE.sub(" ", ln).strip() for ln in text.split("\n")]
        text = "\n".join(ln for ln in lines if ln)
        if text:
            self.add(text)
        self.buf = []

    def text_of(self, el) -> str:
        return " ".join(normalize(_gather(el)).split())

    def walk(self, el) -> None:
        tag = _tag(el)
        if tag in _DROP or not tag:
            if el.tail:
                self.buf.append(el.tail)
            return
        heading = _HEADING.match(tag)
        chrome = None if self.mask else _chrome(el, tag)
        if chrome:
            self.flush()
            self.mask = chrome
            if el.text:
                self.buf.append(el.text)
            for child in el:
                self.walk(child)
            self.flush()
            self.mask = None
        elif heading and self.mask:
            self.flush()
            self.add(self.text_of(el))
        elif heading:
            self.flush()
            title = self.text_of(el).rstrip("¶#").strip()  # a permalink anchor is no part of the title
            if self.title is None:
                self.title = title
            if title and title == self.skip_title:
                self.b.add(title)
                self.skip_title = None
            elif title:
                self.b.heading(int(heading.group(1)) + self.shift, title)
        elif tag == "table":
            self.flush()
            rows = []
            for tr in el.iter():
                if _tag(tr) != "tr":
                    continue
                cells = [self.text_of(td) for td in tr if _tag(td) in ("td", "th")]
                if any(cells):
                    rows.append("\t".join(cells))
            caption = next((c for c in el if _tag(c) == "caption"), None)
            if caption is not None:
                self.add(self.text_of(caption))
            if rows:
                self.add("\n".join(rows))
        elif tag == "img":
            alt = (el.get("alt") or "").strip()
            if alt:
                self.buf.append(f" {alt} ")
        elif tag == "pre":
            self.flush()
            self.add(normalize("".join(el.itertext())).strip("\n"))
        else:
            block = tag in _BLOCK
            if block:
                self.flush()
            if tag == "br":
                self.buf.append("\n")
            if el.text:
                self.buf.append(el.text)
            for child in el:
                self.walk(child)
            if block:
                self.flush()
        if el.tail:
            self.buf.append(el.tail)


def walk_html(root, builder: Builder, level_shift: int = 0, skip_title: str | None = None) -> str | None:
    """Append the text of an lxml tree's body to `builder`; the first heading's text."""
    body = next((el for el in root.iter() if _tag(el) == "body"), root)
    walker = _Walker(builder, level_shift, skip_title)
    walker.walk(body)
    walker.flush()
    return walker.title


def html_tree(data: bytes, name: str = "the page"):
    import lxml.html

    check_entities(data, name)

    # lxml reads bytes without a declared charset as Latin-1; valid UTF-8 is far likelier to be UTF-8
    try:
        data.decode("utf-8")
        parser = lxml.html.HTMLParser(encoding="utf-8")
    except UnicodeDecodeError:
        parser = None  # its <meta charset>, else lxml's guess
    try:
        return lxml.html.document_fromstring(data, parser=parser)
    except Exception as exc:  # lxml's ParserError: nothing it can read
        raise ParseError("corrupt", f"not readable HTML: {exc}") from None


def parse_html(data: bytes) -> Parsed:
    root = html_tree(data)
    title_el = root.find(".//title")
    b = Builder()
    first = walk_html(root, b)
    title = title_el.text_content().strip() if title_el is not None and title_el.text_content() else first
    return b.build("html", title)
