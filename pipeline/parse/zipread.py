"""Zip-based files (DOCX, PPTX, EPUB) inflated under a budget that counts the bytes as they come out.

A zip's central directory declares each member's size, and `zipfile` neither binds to it nor streams:
`ZipFile.read()` inflates a member in one call of up to 2 GiB and only then truncates it to the declared
size, so a 1 MB DOCX declaring a small `document.xml` that inflates to 1 GiB passed the old check on the
declared sizes and peaked at 2.1 GB RSS before failing its CRC. Here every member is inflated in chunks
of CHUNK bytes with zlib, straight from the archive's bytes, and the count stops the read:
- a member that inflates past the size its header declares is a lie, refused at once;
- all members together past `max_expanded_mb`, or past `max_expansion_ratio` times the file once past
  EXPANSION_RATIO_FLOOR bytes, are a zip bomb.
Both are `too_large_expanded`. The declared sizes are still checked first, so an honest bomb is refused
before anything inflates. Once every member has inflated within its declared size, a reader that trusts
the headers (python-docx, python-pptx) reads no more than was counted.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from pipeline.parse.bounds import EXPANSION_RATIO_FLOOR, ParseLimits
from pipeline.parse.layout import ParseError
from pipeline.parse.safexml import check_entities

CHUNK = 1 << 20  # bytes inflated per zlib call: the most one step holds besides what is kept
_LOCAL = struct.Struct("<4s5H3L2H")  # a member's local file header; name and extra lengths are last
_XML_SUFFIXES = (".xml", ".rels", ".opf", ".ncx", ".xhtml", ".html", ".htm")
_HEAD = 65_536  # an XML member's prolog (where a DOCTYPE must be) is looked for entities in this much


def _budget_error(total: int, size: int, limits: ParseLimits) -> ParseError | None:
    limit = limits.max_expanded_mb * 1_000_000
    if total > limit:
        return ParseError(
            "too_large_expanded",
            f"expands past {limit:,} bytes from {size:,} (parse_max_expanded_mb): refused as a zip bomb",
        )
    if total > EXPANSION_RATIO_FLOOR and total > limits.max_expansion_ratio * max(size, 1):
        return ParseError(
            "too_large_expanded",
            f"expands past {total:,} bytes from {size:,}, more than {limits.max_expansion_ratio:g} times "
            "its size (parse_max_expansion_ratio): refused as a zip bomb",
        )
    return None


def _data_offset(data: bytes, info: zipfile.ZipInfo) -> int:
    at = info.header_offset
    if at < 0 or at + _LOCAL.size > len(data):
        raise ParseError("corrupt", f"zip member {info.filename!r} starts outside the file")
    head = _LOCAL.unpack_from(data, at)
    if head[0] != b"PK\x03\x04":
        raise ParseError("corrupt", f"zip member {info.filename!r} has no local header")
    return at + _LOCAL.size + head[-2] + head[-1]


def _inflate(data: bytes, info: zipfile.ZipInfo, start: int):  # -> Iterator[bytes]
    """The member's bytes, CHUNK at most at a time, however much its header says it holds."""
    raw = memoryview(data)[start : min(len(data), start + info.compress_size)]
    if info.compress_type == zipfile.ZIP_STORED:
        for at in range(0, len(raw), CHUNK):
            yield bytes(raw[at : at + CHUNK])
        return
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise ParseError(
            "corrupt", f"zip member {info.filename!r} uses compression method {info.compress_type}, "
            "not one a document is written with (stored or deflated)"
        )  # fmt: skip
    inflater = zlib.decompressobj(-15)
    at = 0
    try:
        while not inflater.eof:
            if inflater.unconsumed_tail:
                piece = inflater.unconsumed_tail
            elif at < len(raw):
                piece, at = raw[at : at + CHUNK], at + CHUNK
            else:
                piece = b""  # input spent: output zlib still holds comes out of an empty call
            out = inflater.decompress(piece, CHUNK)
            if not out and not piece:
                break
            if out:
                yield out
    except zlib.error as exc:
        raise ParseError("corrupt", f"zip member {info.filename!r} is damaged: {exc}") from None
    if not inflater.eof:
        raise ParseError("corrupt", f"zip member {info.filename!r} is truncated")


def read_zip(data: bytes, limits: ParseLimits, keep: bool = False) -> dict[str, bytes]:
    """Inflate every member of the zip `data` under `limits`; {name: bytes} when `keep`, else {} (the
    members were only counted, for a library that reads the zip itself). Raises `corrupt`,
    `too_large_expanded`, or `unsafe_xml` for an XML member that declares entities."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, struct.error) as exc:
        raise ParseError("corrupt", f"not a readable zip archive (truncated or damaged): {exc}") from None
    declared = sum(m.file_size for m in members)
    error = _budget_error(declared, len(data), limits)
    if error is not None:
        error.reason = "its central directory declares that it " + error.reason
        raise error
    total = 0
    out: dict[str, bytes] = {}
    for info in members:
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            raise ParseError("encrypted", f"zip member {info.filename!r} is encrypted")
        parts: list[bytes] = []
        size = 0
        xml = info.filename.lower().endswith(_XML_SUFFIXES)
        head = b""
        for piece in _inflate(data, info, _data_offset(data, info)):
            size += len(piece)
            total += len(piece)
            if size > info.file_size:
                raise ParseError(
                    "too_large_expanded",
                    f"zip member {info.filename!r} inflates past the {info.file_size:,} bytes its header "
                    "declares: a zip whose headers lie about its size, refused as a zip bomb",
                )
            error = _budget_error(total, len(data), limits)
            if error is not None:
                raise error
            if xml and len(head) < _HEAD:
                head += piece[: _HEAD - len(head)]
            if keep:
                parts.append(piece)
        if xml and not keep:  # a kept member is checked whole by the parser that reads it
            check_entities(head, info.filename)
        if keep:
            out[info.filename] = b"".join(parts)
    return out
