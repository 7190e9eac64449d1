"""What a file really is, by its first bytes, before its suffix is believed.

A suffix that lies (an HTML page saved as `.pdf`) is a `wrong_type` status naming what the bytes are,
never a parser's stack trace. A zip-based file's size is counted as it inflates (`pipeline.parse.zipread`).
"""

from __future__ import annotations

from pipeline.parse.layout import ParseError

_ZIP_FORMATS = {"docx", "pptx", "epub"}


def sniff(data: bytes) -> str:
    """'pdf', 'zip', 'html', 'ole' (old Office), 'text' or 'binary' from the first bytes."""
    head = data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        return "zip"
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "ole"
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if (
        lowered.startswith((b"<!doctype html", b"<html", b"<?xml"))
        or b"<html" in lowered
        or b"<body" in lowered
    ):
        return "html"
    if b"\x00" in head:
        return "binary"
    return "text"


_NAMES = {
    "pdf": "a PDF",
    "zip": "a zip archive",
    "html": "HTML",
    "ole": "an old binary Office file (.doc/.ppt/.xls)",
    "text": "plain text",
    "binary": "binary data",
}


def check_kind(fmt: str, data: bytes) -> None:
    """Raise `wrong_type` when the bytes are not the format the suffix names."""
    kind = sniff(data)
    want = "zip" if fmt in _ZIP_FORMATS else fmt
    ok = kind in ("html", "text") if fmt == "html" else kind == want
    if not ok:
        if kind == "text" and fmt == "pdf" and not data[:1024].strip():
            raise ParseError("corrupt", "the file holds no PDF header (blank)")
        raise ParseError(
            "wrong_type", f"named .{fmt} but its bytes are {_NAMES[kind]}; rename it or convert it"
        )
