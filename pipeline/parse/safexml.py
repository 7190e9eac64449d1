"""XML and XHTML are read with entity expansion and DTDs off, and a file that declares entities is
refused, named for what it is.

lxml already never resolves an entity here (`resolve_entities=False`, `no_network=True`, no DTD loaded,
`huge_tree=False`), python-docx and python-pptx parse the same way. That keeps a file's entities out of the
text but not the declarations: the HTML parser does not read a DOCTYPE's internal subset, so an XXE probe
left `]>` and `&xxe;` in the document, and an EPUB billion-laughs file was refused as "spine lists no
chapters". A document has no use for entities of its own (XHTML's named characters need no DTD), so one
that declares any is an `unsafe_xml` ingest error whose reason says which kind: entities that expand into
each other (billion laughs), an external entity (XXE), or plain declarations.
"""

from __future__ import annotations

import re

from pipeline.parse.layout import ParseError

_SUBSET = re.compile(rb"<!DOCTYPE\b[^\[>]*\[(.*?)\]\s*>", re.IGNORECASE | re.DOTALL)
_ENTITY = re.compile(
    rb"<!ENTITY\s+(%\s+)?([^\s>]+)\s*(?:(SYSTEM|PUBLIC)\b)?\s*(\"[^\"]*\"|'[^']*')?",
    re.IGNORECASE,
)
_REF = re.compile(rb"[&%]([A-Za-z_:][\w.:-]*);")
_BOMS = ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _as_ascii_superset(data: bytes) -> bytes:
    """`data` in an encoding where '<!ENTITY' is those bytes: UTF-16 (by its BOM, or by the NUL bytes of
    '<?xml'/'<!' when it has none) re-encoded as UTF-8; anything else as it is."""
    codec = next((c for bom, c in _BOMS if data.startswith(bom)), None)
    if codec is None and len(data) >= 4 and data[0:1] == b"<" and data[1:2] == b"\0":
        codec = "utf-16-le"
    elif codec is None and len(data) >= 4 and data[0:1] == b"\0" and data[1:2] == b"<":
        codec = "utf-16-be"
    if codec is None:
        return data
    return data.decode(codec, errors="replace").encode("utf-8")


def check_entities(data: bytes, name: str) -> None:
    """Raise `unsafe_xml` when `data` (XML or (X)HTML, named `name` in the reason) declares entities in
    its DOCTYPE's internal subset."""
    if b"<!" not in data and b"<\0!" not in data:  # no declaration at all, in UTF-8 or UTF-16
        return
    text = _as_ascii_superset(data)
    match = _SUBSET.search(text)
    if match is None or b"<!entity" not in match.group(1).lower():
        return
    decls = [
        (m.group(2).decode("utf-8", "replace"), bool(m.group(3)), m.group(4) or b"")
        for m in _ENTITY.finditer(match.group(1))
    ]
    if not decls:
        raise ParseError("unsafe_xml", f"{name} declares XML entities in its DTD; entities are never read")
    declared = {n for n, _, _ in decls}
    nested = [
        (n, len(_REF.findall(value)))
        for n, external, value in decls
        if not external and any(r.decode("utf-8", "replace") in declared for r in _REF.findall(value))
    ]
    if nested:
        worst, refs = max(nested, key=lambda nr: nr[1])
        raise ParseError(
            "unsafe_xml",
            f"{name} is a 'billion laughs' entity-expansion bomb: {len(decls)} XML entities expand into "
            f"each other ('{worst}' holds {refs} references); entities are never expanded",
        )
    external = [(n, value.strip(b"\"'").decode("utf-8", "replace")) for n, ext, value in decls if ext]
    if external:
        entity, target = external[0]
        raise ParseError(
            "unsafe_xml",
            f"{name} declares an external XML entity (XXE): '{entity}' would read {target[:120]!r} into "
            "the text; entities are never resolved",
        )
    names = ", ".join(sorted(declared)[:5])
    raise ParseError(
        "unsafe_xml",
        f"{name} declares XML entities in its DTD ({names}); entity expansion is off, so their text "
        "cannot be read",
    )


def xml_parser():  # -> lxml.etree.XMLParser
    """lxml's parser with every door that reads beyond the file shut, and no tree deeper or larger than
    libxml2's safe defaults."""
    from lxml import etree

    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=True
    )
