"""A change to a namespace's input folder, made within the limits: the file size, the namespace's quota
(bytes and documents), safe names, types sniffed from the bytes, and no file written twice.

Each uploaded part is streamed to a hidden file beside its destination, counted and hashed as it goes
(refused past the per-file limit before it is all read), then renamed into place: a reader of the folder
(a run's ingest) sees a whole file or none. The same bytes as a file the namespace already holds are one
document: reported as a duplicate of it and not written again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pipeline.ops.ingest import SUPPORTED_SUFFIXES
from pipeline.parse.sniff import sniff
from pipeline.service.errors import ServiceError
from pipeline.service.uploads.changes import file_id
from pipeline.service.uploads.folders import STATE, input_folder
from pipeline.service.uploads.names import inside, safe_name
from pipeline.service.uploads.status import input_files
from pipeline.settings import Settings

CHUNK = 1 << 20
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class TooLarge(ServiceError):
    status, code = 413, "file_too_large"


class QuotaExceeded(ServiceError):
    status, code = 413, "quota_exceeded"


class UnsupportedType(ServiceError):
    status, code = 415, "unsupported_type"


class DocumentExists(ServiceError):
    status, code = 409, "document_exists"


class DocumentNotFound(ServiceError):
    status, code = 404, "not_found"


@dataclass
class Incoming:
    """One uploaded file, received whole beside the folder, not yet in it."""

    name: str
    path: Path
    size: int
    sha256: str
    kind: str  # what the bytes are (`pipeline.parse.sniff`)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


def namespace_lock(namespace: str) -> threading.Lock:
    """One change at a time per namespace: the quota and duplicate checks and the write are one step."""
    with _locks_guard:
        return _locks.setdefault(namespace, threading.Lock())


def receive(settings: Settings, namespace: str, raw_name: str | None, source: IO[bytes]) -> Incoming:
    """Stream one part to a hidden file in the namespace's folder, within the per-file limit."""
    name = safe_name(raw_name)
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedType(
            f"{name!r}: files of type {suffix or '(none)'!r} are not indexed",
            detail={"name": name, "supported": sorted(SUPPORTED_SUFFIXES)},
        )
    limit = settings.service_upload_max_file_bytes
    incoming = input_folder(settings, namespace) / STATE / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    path = incoming / f"{os.getpid()}-{threading.get_ident()}-{file_id(name)}"
    digest, size, head = hashlib.sha256(), 0, b""
    try:
        with open(path, "wb") as out:
            while block := source.read(CHUNK):
                size += len(block)
                if size > limit:
                    raise TooLarge(
                        f"{name!r} is larger than the limit of {limit:,} bytes per file",
                        detail={"name": name, "limit_bytes": limit},
                    )
                if len(head) < 1024:
                    head += block[: 1024 - len(head)]
                digest.update(block)
                out.write(block)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Incoming(name, path, size, digest.hexdigest(), sniff(head))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def place(
    settings: Settings,
    namespace: str,
    parts: list[Incoming],
    *,
    replacing: str | None = None,
    known: dict[str, str] | None = None,
) -> tuple[list[Incoming], list[tuple[Incoming, str]]]:
    """Move `parts` into the folder (the namespace's lock held): the ones written, and the duplicates
    (each with the name of the file that holds its bytes), which are not. `replacing`: the name the one
    part replaces. `known`: sha256 by name from the change log, so unchanged files are not re-hashed."""
    folder = input_folder(settings, namespace)
    files = input_files(settings, namespace)
    hashes = dict(known or {})
    by_size: dict[int, list[str]] = {}
    for name, size in files.items():
        by_size.setdefault(size, []).append(name)

    def holder(part: Incoming) -> str | None:
        for name in by_size.get(part.size, []):
            if name == replacing:
                continue
            if name not in hashes:
                hashes[name] = sha256_of(folder / name)
            if hashes[name] == part.sha256:
                return name
        return None

    written, duplicates = [], []
    new_bytes = sum(files.values()) - (files.get(replacing, 0) if replacing else 0)
    new_count = len(files) - (1 if replacing in files else 0)
    for part in parts:
        same = holder(part) or next((w.name for w in written if w.sha256 == part.sha256), None)
        if same is not None:
            duplicates.append((part, same))
            continue
        if part.name in files and part.name != replacing:
            raise DocumentExists(
                f"namespace {namespace!r} already holds {part.name!r}: replace it with PUT "
                f".../documents/{file_id(part.name)}",
                detail={"name": part.name, "id": file_id(part.name)},
            )
        new_bytes += part.size
        new_count += 1
        written.append(part)
    _check_quota(settings, namespace, new_bytes, new_count)
    for part in written:
        os.replace(part.path, inside(folder, part.name))
    for part, _ in duplicates:
        part.discard()
    return written, duplicates


def _check_quota(settings: Settings, namespace: str, size: int, count: int) -> None:
    max_bytes, max_docs = settings.service_namespace_max_bytes, settings.service_namespace_max_documents
    if size > max_bytes:
        raise QuotaExceeded(
            f"namespace {namespace!r} would hold {size:,} bytes of documents, over its quota of "
            f"{max_bytes:,}",
            detail={"limit_bytes": max_bytes, "would_hold_bytes": size},
        )
    if count > max_docs:
        raise QuotaExceeded(
            f"namespace {namespace!r} would hold {count:,} documents, over its quota of {max_docs:,}",
            detail={"limit_documents": max_docs, "would_hold_documents": count},
        )


def find(settings: Settings, namespace: str, document_id: str, extra: dict[str, Any]) -> str:
    """The name of the input folder's file with `document_id` (`extra`: names known elsewhere)."""
    for name in [*input_files(settings, namespace), *extra]:
        if file_id(name) == document_id:
            return name
    raise DocumentNotFound(f"no document {document_id!r} in namespace {namespace!r}")
