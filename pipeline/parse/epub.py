"""EPUB through zipfile and lxml (ebooklib adds nothing this needs): the package file's spine gives the
chapters in reading order, the table of contents (EPUB 3 `nav`, else EPUB 2 `toc.ncx`) their titles.
Each chapter opens a level-1 section named by its contents entry (else its first heading); its own
headings are sections below it. An EPUB has no fixed pages, so it has no page map.

The members come already inflated under the counted budget (`pipeline.parse.zipread`); every XML and
XHTML member is checked for declared entities before it is parsed (`pipeline.parse.safexml`), so a
billion-laughs package file is refused as one, not as an empty spine.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

from pipeline.parse.html import html_tree, walk_html
from pipeline.parse.layout import Builder, Parsed, ParseError
from pipeline.parse.safexml import check_entities, xml_parser

# XML namespace names (lxml Clark notation): identifiers inside the file, never fetched.
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"


def _xml(data: bytes, name: str):
    from lxml import etree

    check_entities(data, name)
    return etree.fromstring(data, xml_parser())


def _toc(
    members: dict[str, bytes], opf_dir: str, manifest: dict[str, tuple[str, str, str]]
) -> dict[str, str]:
    """{chapter path: title} from the navigation document or the NCX (first entry per file wins)."""
    titles: dict[str, str] = {}
    for href, media, props in manifest.values():
        path = posixpath.normpath(posixpath.join(opf_dir, href))
        try:
            if "nav" in props.split():
                root = html_tree(members[path], path)
                for a in root.iter("a"):
                    target = a.get("href")
                    if target:
                        full = posixpath.normpath(posixpath.join(posixpath.dirname(path), unquote(target)))
                        titles.setdefault(full.split("#")[0], " ".join(a.text_content().split()))
            elif media == "application/x-dtbncx+xml":
                root = _xml(members[path], path)
                for point in root.iter(f"{_NCX}navPoint"):
                    label = point.find(f"{_NCX}navLabel/{_NCX}text")
                    content = point.find(f"{_NCX}content")
                    if label is not None and content is not None and content.get("src"):
                        src = unquote(content.get("src"))
                        full = posixpath.normpath(posixpath.join(posixpath.dirname(path), src))
                        titles.setdefault(full.split("#")[0], " ".join((label.text or "").split()))
        except (KeyError, ValueError):
            continue
    return {k: v for k, v in titles.items() if v}


def parse_epub(members: dict[str, bytes]) -> Parsed:
    """An EPUB from its inflated members ({name: bytes}, `zipread.read_zip(..., keep=True)`)."""
    try:
        container = _xml(members["META-INF/container.xml"], "META-INF/container.xml")
        rootfile = next(el for el in container.iter() if str(el.tag).endswith("rootfile"))
        opf_path = rootfile.get("full-path") or ""
        opf = _xml(members[opf_path], opf_path)
    except (KeyError, StopIteration, ValueError) as exc:
        raise ParseError("corrupt", f"not a readable EPUB: {type(exc).__name__}: {exc}") from None
    opf_dir = posixpath.dirname(opf_path)
    manifest = {
        item.get("id"): (
            unquote(item.get("href") or ""),
            item.get("media-type") or "",
            item.get("properties") or "",
        )
        for item in opf.iter(f"{_OPF}item")
    }
    spine = [ref.get("idref") for ref in opf.iter(f"{_OPF}itemref") if ref.get("linear") != "no"]
    if not spine:
        raise ParseError("zero_pages", "the EPUB's spine lists no chapters")
    titles = _toc(members, opf_dir, manifest)
    b = Builder()
    for idref in spine:
        if idref not in manifest:
            continue
        href, media, props = manifest[idref]
        if "nav" in props.split() or "html" not in media:
            continue
        path = posixpath.normpath(posixpath.join(opf_dir, href))
        try:
            data = members[path]
        except KeyError:
            continue
        try:
            root = html_tree(data, path)
        except ParseError as exc:
            if exc.error_type == "unsafe_xml":  # never a chapter quietly left out: the file is refused
                raise
            continue
        toc_title = titles.get(path)
        if toc_title:
            b.open_section(1, toc_title, b.offset + (2 if b.offset else 0))
            walk_html(root, b, level_shift=1, skip_title=toc_title)
        else:
            walk_html(root, b)
    title_el = next(iter(opf.iter(f"{_DC}title")), None)
    title = (title_el.text or "").strip() if title_el is not None else None
    return b.build("epub", title or None)
