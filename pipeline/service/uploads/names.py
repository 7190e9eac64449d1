"""An uploaded file's name made safe to store: one plain file name inside the namespace's input folder.

A client's name is a label, never a path: no separators, no `..`, no control characters or NUL, no
leading dot (a hidden name would be skipped by ingest, and `.graphrag` is the service's), NFC-normalised
so that one name typed two ways is one file, and at most 200 bytes of UTF-8 (filesystems stop at 255).
A name that cannot be made safe is refused with what was wrong, never silently renamed to something else.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from pipeline.service.errors import InvalidRequest

MAX_NAME_BYTES = 200


class UnsafeName(InvalidRequest):
    code = "unsafe_name"


def safe_name(raw: str | None) -> str:
    """`raw` as the name it is stored under, or UnsafeName saying why it cannot be."""
    if not raw:
        raise UnsafeName("a file part needs a file name")
    name = unicodedata.normalize("NFC", raw)
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or c == "\x00"]
    if bad:
        raise UnsafeName(f"file name {name!r} holds control characters")
    if "/" in name or "\\" in name:
        raise UnsafeName(f"file name {name!r} holds a path separator: send the file's own name only")
    name = name.strip()
    if name in ("", ".", ".."):
        raise UnsafeName(f"file name {name!r} is not a file name")
    if name.startswith("."):
        raise UnsafeName(f"file name {name!r} starts with a dot (hidden names are not read)")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise UnsafeName(f"file name is longer than {MAX_NAME_BYTES} bytes of UTF-8")
    return name


def inside(folder: Path, name: str) -> Path:
    """`folder/name`, checked to resolve inside `folder` (a link planted in the folder cannot redirect it)."""
    root = folder.resolve()
    target = (root / name).resolve()
    if target.parent != root:
        raise UnsafeName(f"file name {name!r} does not stay inside the namespace's folder")
    return root / name
