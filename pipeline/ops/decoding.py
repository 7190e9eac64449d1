"""A text file's bytes as text, by the ingest's rules (`pipeline.ops.ingest`, which hands `decode_bytes` to
`pipeline.ops.parsed_files` for Markdown and reStructuredText): UTF-8 (BOM allowed), UTF-16 or UTF-32 by
their byte-order mark (or UTF-16 by its NULs), then each configured fallback encoding; a binary file, or
bytes no encoding fits, refused with a clear reason (`Rejected`).
"""

from __future__ import annotations


class Rejected(Exception):
    """A file or row that gives no document: `error_type` is its ingest_errors status."""

    def __init__(self, error_type: str, reason: str) -> None:
        super().__init__(reason)
        self.error_type = error_type
        self.reason = reason


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return len(sample) > 0 and control / len(sample) > 0.10


# A UTF-32 LE BOM begins with the UTF-16 LE one, so the longer marks are tried first.
_UNICODE_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32", "UTF-32"),
    (b"\x00\x00\xfe\xff", "utf-32", "UTF-32"),
    (b"\xff\xfe", "utf-16", "UTF-16"),
    (b"\xfe\xff", "utf-16", "UTF-16"),
)


def _wide_unicode(data: bytes) -> str | None:
    """Text in UTF-16 or UTF-32, whose NUL bytes would otherwise make it look binary: named by its BOM,
    or UTF-16 without one when every other byte (and only those) is mostly NUL, as in Latin text."""
    for bom, codec, name in _UNICODE_BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise Rejected(
                    "encoding",
                    f"starts with a {name} byte-order mark but is not valid {name} (offset {exc.start})",
                ) from None
            if _looks_binary(text[:8192].encode("utf-8")):
                raise Rejected(
                    "binary", f"{name} that decodes to control characters: a binary file, not text"
                )
            return text
    sample = data[: 8192 & ~1]
    if len(data) % 2 or len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    for zeros, other, codec in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if 0 not in other and zeros.count(0) * 2 >= len(zeros):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                return None
            return None if _looks_binary(text[:8192].encode("utf-8")) else text
    return None


def decode_bytes(data: bytes, fallback_encodings: tuple[str, ...] = ()) -> str:
    """UTF-8 (BOM allowed), UTF-16/32 (by BOM, or UTF-16 by its NULs), then each fallback encoding; a
    clear reason when none fits."""
    if (wide := _wide_unicode(data)) is not None:
        return wide
    if _looks_binary(data):
        raise Rejected("binary", "looks like a binary file (NUL or control bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        for enc in fallback_encodings:
            try:
                return data.decode(enc)
            except (UnicodeDecodeError, LookupError):
                continue
        raise Rejected(
            "encoding",
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "re-save as UTF-8 or set PIPELINE_FALLBACK_ENCODINGS (e.g. latin-1)",
        ) from None


def check_text(text: str) -> str:
    """`text`, refused as empty when it is only whitespace."""
    if not text.strip():
        raise Rejected("empty", "document is empty (no text after stripping whitespace)")
    return text
