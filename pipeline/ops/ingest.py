"""Read a namespace's input folder into documents, with one clear error per bad document.

Files: `.txt`, `.md` (one document each) and `.json`, `.jsonl`, `.csv`, `.parquet` (one document per
row with id/title/text columns; a `.json` object of `{title: [sentences]}`, as HippoRAG ships HotpotQA and
2WikiMultihopQA, is one document per title, its sentences joined by spaces). A document's id is the sha256 of its text, so the same text under a
new file name is the same document and an edited file is a new one.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline.core.documents import Document, IngestError, document_id
from pipeline.ops.decoding import Rejected, check_text, decode_bytes
from pipeline.ops.input_folder import InputEntry, read_regular, scan
from pipeline.parse.bounds import ParseLimits
from pipeline.settings import default_of

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
ROW_SUFFIXES = {".json", ".jsonl", ".ndjson", ".csv", ".parquet"}
PARSED_SUFFIXES = {".pdf", ".docx", ".pptx", ".html", ".htm", ".xhtml", ".epub", ".md", ".markdown", ".rst"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | ROW_SUFFIXES | PARSED_SUFFIXES


@dataclass
class IngestResult:
    documents: list[Document]
    errors: list[IngestError]
    duplicates: int = 0
    files: int = 0  # every visible entry of the folder, skipped ones included
    files_rejected: int = 0  # files that gave no document and an error (a file-level one, or one per row)
    rows_rejected: int = 0  # rejected rows of the files that were not rejected whole

    def rejection_line(self) -> str | None:
        """`N of M files rejected (see ingest_errors)`, or None when nothing was rejected."""
        return rejection_line(self.files, self.files_rejected, self.rows_rejected)


def rejection_line(files: int, files_rejected: int, rows_rejected: int) -> str | None:
    if not files_rejected and not rows_rejected:
        return None
    rows = f" and {rows_rejected:,} rows" if rows_rejected else ""
    return f"{files_rejected:,} of {files:,} files{rows} rejected (see ingest_errors)"


@dataclass(frozen=True)
class IngestOptions:
    max_document_bytes: int = default_of("max_document_bytes")
    fallback_encodings: tuple[str, ...] = ()
    id_column: str = default_of("id_column")
    title_column: str = default_of("title_column")
    text_column: str = default_of("text_column")
    parse_cache_dir: str | None = None  # pipeline.parse.cache: parsed files by their bytes
    parse_limits: ParseLimits = ParseLimits()  # each parsed file's budgets (pipeline.parse.bounds)
    ocr_run_max_pages: int = default_of("ocr_run_max_pages")
    ocr_run_max_seconds: float = default_of("ocr_run_max_seconds")


# A record is an object of scalars; deeper than this is no document. The limit is fixed because Python's
# parser recurses once per level, so whether 900 levels parse would depend on the caller's stack depth.
MAX_JSON_DEPTH = 100
_TOO_DEEP = f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels of arrays and objects)"


def _too_deep(loaded: Any) -> bool:
    """Whether parsed JSON nests arrays and objects deeper than MAX_JSON_DEPTH, walked level by level
    (no recursion, and a record's scalars cost one isinstance each)."""
    level, depth = [loaded], 1
    while level:
        if depth > MAX_JSON_DEPTH:
            return True
        level = [
            c
            for node in level
            for c in (node.values() if isinstance(node, dict) else node)
            if isinstance(c, dict | list)
        ]
        depth += 1
    return False


def _load_json(text: str) -> Any:
    """json.loads, with nesting past MAX_JSON_DEPTH refused as such (not as invalid JSON)."""
    try:
        loaded = json.loads(text)
    except RecursionError:
        raise Rejected("too_deep", _TOO_DEEP) from None
    # fewer brackets than the limit cannot nest past it: most files skip the walk
    shallow = text.count("[") + text.count("{") <= MAX_JSON_DEPTH
    if not shallow and isinstance(loaded, dict | list) and _too_deep(loaded):
        raise Rejected("too_deep", _TOO_DEEP)
    return loaded


def _row_records(path: Path, data: bytes, opts: IngestOptions) -> Iterator[dict[str, Any] | Rejected]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from pq.read_table(io.BytesIO(data)).to_pylist()
        return
    text = decode_bytes(data, opts.fallback_encodings)
    if suffix == ".csv":
        yield from csv.DictReader(io.StringIO(text))
    elif suffix in (".jsonl", ".ndjson"):
        for lineno, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    yield _load_json(line)
                except json.JSONDecodeError as exc:
                    # one broken line costs that row only; the file's other rows are still indexed
                    yield Rejected("malformed", f"line {lineno}: invalid JSON ({exc.msg})")
                except Rejected as rej:
                    yield Rejected(rej.error_type, f"line {lineno}: {rej.reason}")
    else:
        try:
            loaded = _load_json(text)
        except json.JSONDecodeError as exc:
            raise Rejected(
                "malformed", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        if isinstance(loaded, dict) and _is_title_mapping(loaded, opts):
            # HippoRAG's corpora of HotpotQA and 2WikiMultihopQA: {title: [sentences]}
            loaded = [
                {opts.title_column: title, opts.text_column: " ".join(s.strip() for s in sentences)}
                for title, sentences in loaded.items()
            ]
        if isinstance(loaded, dict):
            loaded = [loaded]
        if not isinstance(loaded, list):
            raise Rejected("malformed", "JSON must be an object or an array of objects")
        yield from loaded


def _is_title_mapping(loaded: dict[str, Any], opts: IngestOptions) -> bool:
    """Whether a JSON object is {title: [sentences]} rather than one record with named columns."""
    return (
        bool(loaded)
        and opts.text_column not in loaded
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in loaded.values())
    )


def read_documents(folder: str | os.PathLike[str], options: IngestOptions | None = None) -> IngestResult:
    """Read every supported file under `folder`; bad documents become IngestError rows."""
    opts = options or IngestOptions()
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"input folder {root} does not exist or is not a directory")
    result = IngestResult(documents=[], errors=[])
    seen: set[str] = set()
    # every parsed file goes through one bounded worker process, started on the first such file; its
    # finalizer ends it should the loop raise
    parser = None

    def add(doc: Document) -> None:
        if doc.id in seen:
            result.duplicates += 1
            return
        seen.add(doc.id)
        result.documents.append(doc)

    for entry in scan(root):
        result.files += 1
        rel = entry.rel
        if not entry.readable:  # a FIFO, socket, device or link out of the folder: never opened
            result.files_rejected += 1
            result.errors.append(IngestError(rel, entry.error_type or "unreadable", entry.reason))
            continue
        suffix = Path(rel).suffix.lower()  # a link's own name says its format, as a file's does
        if suffix in PARSED_SUFFIXES:  # PDF, Office, HTML, EPUB, Markdown/rST headings: pipeline.parse
            from pipeline.ops.parsed_files import read_parsed

            if parser is None:
                from pipeline.parse.worker import BoundedParser

                parser = BoundedParser(opts.parse_limits, opts.ocr_run_max_pages, opts.ocr_run_max_seconds)
            result.files_rejected += not read_parsed(
                entry, rel, suffix, opts, result, add, decode_bytes, parser
            )
            continue
        if suffix not in SUPPORTED_SUFFIXES:
            result.files_rejected += 1
            result.errors.append(
                IngestError(rel, "unsupported", f"unsupported file type {suffix or '(none)'!r}")
            )
            continue
        rows_ok = rows_bad = 0
        try:
            size = entry.stat.st_size if entry.stat else 0
            if suffix in TEXT_SUFFIXES and size > opts.max_document_bytes:
                raise Rejected(
                    "too_large", f"{size:,} bytes exceeds the limit of {opts.max_document_bytes:,} bytes"
                )
            data = read_regular(entry)
            if not data:
                raise Rejected("empty", "file is empty (0 bytes)")
            created = _created(entry)
            if suffix in TEXT_SUFFIXES:
                text = check_text(decode_bytes(data, opts.fallback_encodings))
                add(
                    Document(
                        document_id(text), rel, text, rel, len(data), created, None, {"format": suffix[1:]}
                    )
                )
                continue
            for row_no, record in enumerate(_row_records(Path(rel), data, opts)):
                try:
                    if isinstance(record, Rejected):
                        raise record
                    add(_row_document(record, rel, row_no, created, suffix, opts))
                    rows_ok += 1
                except Rejected as rej:
                    rows_bad += 1
                    result.errors.append(IngestError(rel, rej.error_type, rej.reason, row_no))
            if not rows_ok and not rows_bad:
                raise Rejected("empty", "no rows (the file holds no records)")
            if rows_ok:
                result.rows_rejected += rows_bad
            else:
                result.files_rejected += 1
            continue
        except Rejected as rej:
            result.errors.append(IngestError(rel, rej.error_type, rej.reason))
        except OSError as exc:
            result.errors.append(IngestError(rel, "unreadable", f"cannot read file: {exc.strerror or exc}"))
        except Exception as exc:  # a corrupt Parquet/CSV file must not stop the corpus
            result.errors.append(IngestError(rel, "malformed", f"{type(exc).__name__}: {exc}"))
        if rows_ok:  # a file that broke after some rows still gave documents
            result.rows_rejected += rows_bad
        else:
            result.files_rejected += 1
    if parser is not None:
        parser.close()
    return result


def _created(entry: InputEntry) -> str:
    mtime = entry.stat.st_mtime if entry.stat else 0.0
    return dt.datetime.fromtimestamp(mtime, dt.UTC).isoformat()


def _row_document(
    record: Any, rel: str, row_no: int, created: str, suffix: str, opts: IngestOptions
) -> Document:
    if not isinstance(record, dict):
        raise Rejected("malformed", "row is not an object with named columns")
    text = record.get(opts.text_column)
    if text is None:
        raise Rejected("missing_text", f"row has no {opts.text_column!r} column")
    if not isinstance(text, str):
        raise Rejected("malformed", f"column {opts.text_column!r} is {type(text).__name__}, not text")
    check_text(text)
    n_bytes = len(text.encode("utf-8"))
    if n_bytes > opts.max_document_bytes:
        raise Rejected(
            "too_large", f"{n_bytes:,} bytes exceeds the limit of {opts.max_document_bytes:,} bytes"
        )
    source_id = record.get(opts.id_column)
    title = record.get(opts.title_column)
    title = (
        str(title)
        if title not in (None, "")
        else (str(source_id) if source_id is not None else f"{rel}#{row_no}")
    )
    raw = {
        k: v
        for k, v in record.items()
        if k not in (opts.text_column,) and isinstance(v, str | int | float | bool | type(None))
    }
    meta = {"format": suffix[1:], "row": row_no}
    if source_id is not None:
        meta["source_id"] = str(source_id)
    return Document(document_id(text), title, text, rel, n_bytes, created, raw, meta)


def documents_table(documents: list[Document]):  # -> pa.Table
    """Arrow table in the `documents` schema (text_unit_ids filled later by chunking)."""
    from pipeline.core.schema import DOCUMENTS_SCHEMA
    from pipeline.core.tables import to_table

    rows = [
        {
            "id": d.id,
            "human_readable_id": i,
            "title": d.title,
            "text": d.text,
            "text_unit_ids": [],
            "creation_date": d.creation_date,
            "raw_data": json.dumps(d.raw_data, sort_keys=True, default=str)
            if d.raw_data is not None
            else None,
            "source_path": d.source_path,
            "n_bytes": d.n_bytes,
            "metadata": json.dumps(d.metadata, sort_keys=True, default=str),
            "layout": d.layout,
        }
        for i, d in enumerate(documents)
    ]
    return to_table(rows, DOCUMENTS_SCHEMA)


def errors_table(errors: list[IngestError]):  # -> pa.Table
    from pipeline.core.schema import INGEST_ERRORS_SCHEMA
    from pipeline.core.tables import to_table

    return to_table(
        [
            {"source_path": e.source_path, "row": e.row, "error_type": e.error_type, "reason": e.reason}
            for e in errors
        ],
        INGEST_ERRORS_SCHEMA,
    )
