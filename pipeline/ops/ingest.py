"""Read a namespace's input folder into documents, with one clear error per bad document.

Files: `.txt`, `.md` (one document each) and `.json`, `.jsonl`, `.csv`, `.parquet` (one document per
row with id/title/text columns; a `.json` object of `{title: [sentences]}`, as HippoRAG ships HotpotQA and
2WikiMultihopQA, is one document per title, its sentences joined by spaces). A document's id is the sha256 of its text, so the same text under a
new file name is the same document and an edited file is a new one.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
ROW_SUFFIXES = {".json", ".jsonl", ".ndjson", ".csv", ".parquet"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | ROW_SUFFIXES


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    source_path: str
    n_bytes: int
    creation_date: str
    raw_data: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestError:
    source_path: str
    error_type: str
    reason: str
    row: int | None = None


@dataclass
class IngestResult:
    documents: list[Document]
    errors: list[IngestError]
    duplicates: int = 0
    skipped_files: int = 0


@dataclass(frozen=True)
class IngestOptions:
    max_document_bytes: int = 20_000_000
    fallback_encodings: tuple[str, ...] = ()
    id_column: str = "id"
    title_column: str = "title"
    text_column: str = "text"


class _Reject(Exception):
    def __init__(self, error_type: str, reason: str) -> None:
        super().__init__(reason)
        self.error_type = error_type
        self.reason = reason


def document_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return len(sample) > 0 and control / len(sample) > 0.10


def decode_bytes(data: bytes, fallback_encodings: tuple[str, ...] = ()) -> str:
    """UTF-8 (BOM allowed), then each fallback encoding; a clear reason when none fits."""
    if _looks_binary(data):
        raise _Reject("binary", "looks like a binary file (NUL or control bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        for enc in fallback_encodings:
            try:
                return data.decode(enc)
            except (UnicodeDecodeError, LookupError):
                continue
        raise _Reject(
            "encoding",
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "re-save as UTF-8 or set PIPELINE_FALLBACK_ENCODINGS (e.g. latin-1)",
        ) from None


def _check_text(text: str) -> str:
    if not text.strip():
        raise _Reject("empty", "document is empty (no text after stripping whitespace)")
    return text


def _row_records(path: Path, data: bytes, opts: IngestOptions) -> Iterator[dict[str, Any] | _Reject]:
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
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    # one broken line costs that row only; the file's other rows are still indexed
                    yield _Reject("malformed", f"line {lineno}: invalid JSON ({exc.msg})")
    else:
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _Reject(
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
            raise _Reject("malformed", "JSON must be an object or an array of objects")
        yield from loaded


def _is_title_mapping(loaded: dict[str, Any], opts: IngestOptions) -> bool:
    """Whether a JSON object is {title: [sentences]} rather than one record with named columns."""
    return (
        bool(loaded)
        and opts.text_column not in loaded
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in loaded.values())
    )


def _iter_files(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def read_documents(folder: str | os.PathLike[str], options: IngestOptions | None = None) -> IngestResult:
    """Read every supported file under `folder`; bad documents become IngestError rows."""
    opts = options or IngestOptions()
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"input folder {root} does not exist or is not a directory")
    result = IngestResult(documents=[], errors=[])
    seen: set[str] = set()

    def add(doc: Document) -> None:
        if doc.id in seen:
            result.duplicates += 1
            return
        seen.add(doc.id)
        result.documents.append(doc)

    for path in _iter_files(root):
        rel = path.relative_to(root).as_posix()
        suffix = path.suffix.lower()
        if suffix not in SUPPORTED_SUFFIXES:
            result.skipped_files += 1
            result.errors.append(
                IngestError(rel, "unsupported", f"unsupported file type {suffix or '(none)'!r}")
            )
            continue
        try:
            size = path.stat().st_size
            if suffix in TEXT_SUFFIXES and size > opts.max_document_bytes:
                raise _Reject(
                    "too_large", f"{size:,} bytes exceeds the limit of {opts.max_document_bytes:,} bytes"
                )
            data = path.read_bytes()
            created = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).isoformat()
            if suffix in TEXT_SUFFIXES:
                text = _check_text(decode_bytes(data, opts.fallback_encodings))
                add(
                    Document(
                        document_id(text), rel, text, rel, len(data), created, None, {"format": suffix[1:]}
                    )
                )
                continue
            for row_no, record in enumerate(_row_records(path, data, opts)):
                try:
                    if isinstance(record, _Reject):
                        raise record
                    add(_row_document(record, rel, row_no, created, suffix, opts))
                except _Reject as rej:
                    result.errors.append(IngestError(rel, rej.error_type, rej.reason, row_no))
        except _Reject as rej:
            result.errors.append(IngestError(rel, rej.error_type, rej.reason))
        except OSError as exc:
            result.errors.append(IngestError(rel, "unreadable", f"cannot read file: {exc.strerror or exc}"))
        except Exception as exc:  # a corrupt Parquet/CSV file must not stop the corpus
            result.errors.append(IngestError(rel, "malformed", f"{type(exc).__name__}: {exc}"))
    return result


def _row_document(
    record: Any, rel: str, row_no: int, created: str, suffix: str, opts: IngestOptions
) -> Document:
    if not isinstance(record, dict):
        raise _Reject("malformed", "row is not an object with named columns")
    text = record.get(opts.text_column)
    if text is None:
        raise _Reject("missing_text", f"row has no {opts.text_column!r} column")
    if not isinstance(text, str):
        raise _Reject("malformed", f"column {opts.text_column!r} is {type(text).__name__}, not text")
    _check_text(text)
    n_bytes = len(text.encode("utf-8"))
    if n_bytes > opts.max_document_bytes:
        raise _Reject(
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
