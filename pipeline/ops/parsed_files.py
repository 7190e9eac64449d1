"""The ingest's door to `pipeline.parse`: one input file to one Document with its layout map, or its
ingest_errors status. `pipeline.ops.ingest.read_documents` calls `read_parsed` for every suffix in
`pipeline.parse.FORMATS` (handing it its text decoder, so this module need not import the ingest); a
parse is looked up in (and stored to) the parse cache by the file's bytes, and a file that is not cached
is parsed in the run's bounded worker process (`pipeline.parse.worker.BoundedParser`). A parse that a
budget cut short (pages not read for their size or the OCR budget) is not cached: a later run with budget
left reads it whole.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pipeline.core.documents import Document, IngestError, document_id
from pipeline.ops.input_folder import read_regular
from pipeline.parse import BINARY_FORMATS, FORMATS, OcrPolicy, ParseError
from pipeline.parse.cache import ParseCache, parse_key
from pipeline.parse.worker import BoundedParser

# A PDF or deck holds images and fonts besides its text: its file may be this many times the limit on a
# document's text before it is refused unread.
BINARY_SIZE_FACTOR = 10
_CACHES: dict[str, ParseCache] = {}


def _cache(folder: str | None) -> ParseCache | None:
    if not folder:
        return None
    if folder not in _CACHES:
        try:
            _CACHES[folder] = ParseCache(folder)
        except OSError:  # a read-only cache folder costs the cache, never the document
            return None
    return _CACHES[folder]


def _created(entry: Any) -> str:
    mtime = entry.stat.st_mtime if entry.stat else 0.0
    return dt.datetime.fromtimestamp(mtime, dt.UTC).isoformat()


def read_parsed(
    entry: Any,
    rel: str,
    suffix: str,
    opts: Any,
    result: Any,
    add: Callable[[Document], None],
    decode: Callable[[bytes, tuple[str, ...]], str],
    parser: BoundedParser | None = None,
) -> bool:
    """Parse `entry` (an input_folder.InputEntry) into `result` (an IngestResult) through `add`; False
    when the file gave no document (its error row is appended), True otherwise (warnings such as
    no_text_layer appended). Markdown and reStructuredText are decoded by `decode`, the ingest's rules for
    text files (`opts` is its IngestOptions). `parser` is the run's worker (one of its own, for this file
    alone, when None)."""
    fmt = FORMATS[suffix]
    try:
        size = entry.stat.st_size if entry.stat else 0
        limit = opts.max_document_bytes * (BINARY_SIZE_FACTOR if fmt in BINARY_FORMATS else 1)
        if size > limit:
            raise ParseError("too_large", f"{size:,} bytes exceeds the limit of {limit:,} bytes")
        data = read_regular(entry)
        if not data:
            raise ParseError("empty", "file is empty (0 bytes)")
        policy = OcrPolicy.from_env()
        cache = _cache(getattr(opts, "parse_cache_dir", None))
        limits = opts.parse_limits
        ocr_key = f"{policy.key()}:{limits.ocr_key()}" if policy.enabled else policy.key()
        key = parse_key(data, fmt, ocr_key if fmt == "pdf" else "")
        parsed = cache.get(key) if cache is not None and fmt in BINARY_FORMATS else None
        if parsed is None:
            text = decode(data, opts.fallback_encodings) if fmt not in BINARY_FORMATS else None
            if parser is None:
                with BoundedParser(limits) as own:
                    parsed = own.parse(data, fmt, policy, text)
            else:
                parsed = parser.parse(data, fmt, policy, text)
            if cache is not None and fmt in BINARY_FORMATS and not parsed.skipped:
                cache.put(key, parsed)
        if not parsed.text.strip():
            raise ParseError("empty", "document is empty (no text after stripping whitespace)")
        if len(parsed.text.encode("utf-8")) > opts.max_document_bytes:
            raise ParseError("too_large", f"its text exceeds the limit of {opts.max_document_bytes:,} bytes")
    except ParseError as rej:
        result.errors.append(IngestError(rel, rej.error_type, rej.reason))
        return False
    except OSError as exc:
        result.errors.append(IngestError(rel, "unreadable", f"cannot read file: {exc.strerror or exc}"))
        return False
    except Exception as exc:  # the ingest's decoding refusal, or a parser's own failure on a damaged file
        if isinstance(getattr(exc, "error_type", None), str):
            result.errors.append(IngestError(rel, exc.error_type, getattr(exc, "reason", str(exc))))
        else:
            result.errors.append(IngestError(rel, "corrupt", f"{type(exc).__name__}: {exc}"))
        return False
    for error_type, reason in parsed.warnings:
        result.errors.append(IngestError(rel, error_type, reason))
    meta: dict[str, Any] = {"format": suffix[1:] if fmt in ("md", "rst") else fmt}
    if fmt in BINARY_FORMATS:
        meta.update(pages=len(parsed.layout.pages), sections=len(parsed.layout.sections))
        if parsed.title:
            meta["doc_title"] = parsed.title
    layout = parsed.layout
    has_map = layout.pages or layout.sections or layout.masked or layout.no_text_pages
    add(
        Document(
            document_id(parsed.text),
            rel,
            parsed.text,
            rel,
            len(data),
            _created(entry),
            None,
            meta,
            layout.to_json() if has_map else None,
        )
    )
    return True
