"""Where the pipeline's bytes live: a local folder or ``s3://bucket/prefix`` on any S3-compatible endpoint.

`StorageRoot` is the one place that knows the difference. Code above it names a file by its key under the
root (``<namespace>/<table>.parquet``) and gets the same operations on either backend through a
`pyarrow.fs.FileSystem`; LanceDB gets `uri(key)` and `lance_storage_options()`.

Writes are all-or-nothing on both backends: a local file is written beside its target and renamed over it,
and an S3 object is written by one upload of bytes produced in full first (a PUT replaces an object
atomically, but a stream left half-written by a failing producer would still be completed on close).
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline.core.kill_points import kill_point
from pipeline.core.location import Location, parse_location, split_s3

if TYPE_CHECKING:
    from pipeline.settings import Settings


class StorageError(OSError):
    """The storage root cannot be used as configured; the message says what to fix."""


class BucketNotFoundError(StorageError):
    """The S3 bucket of the storage root does not exist on its endpoint."""


def _reveal(value: Any) -> str | None:
    if value is None:
        return None
    getter = getattr(value, "get_secret_value", None)
    return getter() if getter else str(value)


@dataclass(frozen=True)
class S3Config:
    """How to reach an S3-compatible endpoint; the keys are kept out of repr."""

    endpoint_url: str | None = None  # None: AWS itself, found from the region
    region: str = "us-east-1"
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> S3Config:
        return cls(
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            access_key_id=_reveal(settings.s3_access_key_id),
            secret_access_key=_reveal(settings.s3_secret_access_key),
        )

    @classmethod
    def from_environment(cls) -> S3Config:
        """From PIPELINE_S3_* / AWS_* (and the YAML file), for a store built from a bare s3:// URI."""
        from pipeline.settings import load_settings  # settings validate URIs with this module

        return cls.from_settings(load_settings())

    @property
    def has_keys(self) -> bool:
        return bool(self.access_key_id and self.secret_access_key)


@dataclass(frozen=True)
class StoredFile:
    key: str  # relative to the storage root, '/'-separated
    size: int
    modified: dt.datetime  # UTC

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]


class StorageRoot:
    """A local folder or an S3 prefix, and the file operations the pipeline needs on it.

    Every method takes a key relative to the root ('' is the root itself), '/'-separated."""

    def __init__(self, location: str | os.PathLike[str], s3: S3Config | None = None) -> None:
        parsed = parse_location(location)
        self._local: Path | None = parsed if isinstance(parsed, Path) else None
        self.bucket, self.prefix = ("", "") if self._local is not None else split_s3(str(parsed))
        self._s3 = s3
        self._fs: pafs.FileSystem | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> StorageRoot:
        return cls(settings.storage_root, S3Config.from_settings(settings))

    def __repr__(self) -> str:
        if self.is_local:
            return f"StorageRoot({self.uri()!r})"
        return f"StorageRoot({self.uri()!r}, endpoint={self._endpoint_label()!r})"

    @property
    def is_local(self) -> bool:
        return self._local is not None

    @property
    def s3(self) -> S3Config:
        if self._s3 is None:  # read lazily: a local root never needs the S3 settings
            self._s3 = S3Config.from_environment()
        return self._s3

    # ---- names ---------------------------------------------------------------------------------------
    def path(self, key: str = "") -> str:
        """The key's path on `filesystem` (a local path, or 'bucket/prefix/key')."""
        key = key.strip("/")
        if any(part in (".", "..") for part in key.split("/")):
            # S3 endpoints resolve "ns/../other" to another prefix: a key must stay under the root
            raise ValueError(f"storage key {key!r} has a '.' or '..' segment; keys stay under the root")
        if self._local is not None:
            return str(self._local / key) if key else str(self._local)
        base = f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket
        return f"{base}/{key}" if key else base

    def uri(self, key: str = "") -> str:
        """What another library is given (LanceDB): the local path as configured, or an s3:// URI."""
        return self.path(key) if self.is_local else f"s3://{self.path(key)}"

    def location(self, key: str = "") -> Location:
        return Path(self.path(key)) if self.is_local else self.uri(key)

    # ---- the filesystem ------------------------------------------------------------------------------
    @property
    def filesystem(self) -> pafs.FileSystem:
        if self._fs is None:
            self._fs = pafs.LocalFileSystem() if self.is_local else self._s3_filesystem()
        return self._fs

    def _s3_filesystem(self) -> pafs.S3FileSystem:
        cfg = self.s3
        kwargs: dict[str, Any] = {"region": cfg.region}
        if cfg.endpoint_url:
            parts = urlsplit(cfg.endpoint_url)
            kwargs["scheme"] = parts.scheme or "https"
            kwargs["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
        if cfg.has_keys:
            kwargs["access_key"] = cfg.access_key_id
            kwargs["secret_key"] = cfg.secret_access_key
        return pafs.S3FileSystem(**kwargs)

    def lance_storage_options(self) -> dict[str, str]:
        """LanceDB's `storage_options` for this root: empty for a local folder."""
        if self.is_local:
            return {}
        cfg = self.s3
        options = {"aws_region": cfg.region}
        if cfg.endpoint_url:
            options["aws_endpoint"] = cfg.endpoint_url.rstrip("/")
            if urlsplit(cfg.endpoint_url).scheme == "http":
                options["allow_http"] = "true"
        if cfg.has_keys:
            options["aws_access_key_id"] = str(cfg.access_key_id)
            options["aws_secret_access_key"] = str(cfg.secret_access_key)
        return options

    # ---- errors --------------------------------------------------------------------------------------
    def _endpoint_label(self) -> str:
        return self.s3.endpoint_url or f"AWS S3 ({self.s3.region})"

    def check_bucket(self) -> None:
        """Raise BucketNotFoundError when the S3 bucket does not exist; a no-op for a local root."""
        if self.is_local:
            return
        try:
            missing = self.filesystem.get_file_info(self.bucket).type == pafs.FileType.NotFound
        except OSError:
            return  # not allowed to ask (or unreachable): the caller's own error says more
        if missing:
            raise BucketNotFoundError(
                f"S3 bucket {self.bucket!r} does not exist at {self._endpoint_label()} (storage root "
                f"{self.uri()}); create it, or point PIPELINE_STORAGE_ROOT at an existing bucket"
            )

    @contextmanager
    def explain_errors(self) -> Iterator[None]:
        """Turn a failure caused by a missing bucket into BucketNotFoundError; other errors pass as is."""
        try:
            yield
        except StorageError:
            raise
        except Exception as exc:
            if not self.is_local:
                try:
                    self.check_bucket()
                except BucketNotFoundError as clear:
                    raise clear from exc
            raise

    # ---- reading -------------------------------------------------------------------------------------
    def info(self, key: str) -> pafs.FileInfo:
        return self.filesystem.get_file_info(self.path(key))

    def is_file(self, key: str) -> bool:
        return self.info(key).type == pafs.FileType.File

    def is_dir(self, key: str = "") -> bool:
        """A local folder, or an S3 prefix holding at least one object; creates nothing."""
        return self.info(key).type == pafs.FileType.Directory

    def modified(self, key: str) -> dt.datetime | None:
        """The file's modification time (UTC), None if there is no such file."""
        info = self.info(key)
        return info.mtime if info.type == pafs.FileType.File else None

    def size(self, key: str) -> int | None:
        info = self.info(key)
        return info.size if info.type == pafs.FileType.File else None

    def open_input_file(self, key: str) -> pa.NativeFile:
        """A random-access reader (Parquet and Arrow IPC footers are read without the whole file)."""
        return self.filesystem.open_input_file(self.path(key))

    def read_bytes(self, key: str) -> bytes:
        with self.filesystem.open_input_stream(self.path(key)) as stream:
            return stream.read()

    def list_files(self, key: str = "", suffix: str = "") -> list[StoredFile]:
        """The files directly under `key` whose names end in `suffix`, sorted by name; [] if none."""
        selector = pafs.FileSelector(self.path(key), allow_not_found=True)
        base = key.strip("/")
        found = [
            StoredFile(f"{base}/{i.base_name}" if base else i.base_name, i.size, i.mtime)
            for i in self.filesystem.get_file_info(selector)
            if i.type == pafs.FileType.File
            and i.base_name.endswith(suffix)
            # an S3 object named "prefix/ns/.." lists as a file, and its key would leave the prefix
            and i.base_name not in ("", ".", "..")
        ]
        return sorted(found, key=lambda f: f.key)

    # ---- writing -------------------------------------------------------------------------------------
    @contextmanager
    def open_output(self, key: str) -> Iterator[pa.NativeFile]:
        """A writable stream that replaces the file only if the block completes."""
        if self._local is not None:
            target = Path(self.path(key))
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
            try:
                with pa.OSFile(str(tmp), "wb") as sink:
                    yield sink
                kill_point("parquet_write")  # a test hook (kill_points.py): the file written, not renamed
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
            return
        buffer = pa.BufferOutputStream()
        yield buffer
        self._put(key, buffer.getvalue())

    def write_bytes(self, key: str, data: bytes | pa.Buffer) -> int:
        """Replace the file with `data` (all or nothing); returns its size."""
        if self.is_local:
            with self.open_output(key) as sink:
                sink.write(data)
        else:
            self._put(key, data)
        return len(data) if isinstance(data, bytes) else data.size

    def _put(self, key: str, data: bytes | pa.Buffer) -> None:
        with self.explain_errors(), self.filesystem.open_output_stream(self.path(key)) as out:
            out.write(data)

    def delete(self, key: str) -> bool:
        """Remove the file; False if there was none."""
        try:
            self.filesystem.delete_file(self.path(key))
        except FileNotFoundError:
            return False
        return True

    # ---- immutable copies (index versions, `pipeline.io.manifest`) -----------------------------------
    def write_durable(self, key: str, data: bytes) -> None:
        """Replace the file with `data` so that after a crash it is the old file or the new one, whole.

        Locally: written beside the target, fsynced, renamed over it, and the folder fsynced (a rename
        not yet on disk could come back after a power loss as the old name). On S3 one PUT is atomic."""
        if not self.is_local:
            self._put(key, data)
            return
        target = Path(self.path(key))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        if hasattr(os, "O_DIRECTORY"):
            fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def freeze_copy(self, key: str, dest: str) -> None:
        """Keep the file's current bytes at `dest`, immutable: writers replace files (a new inode, a new
        object) and never write into one, so a hard link is such a copy at no cost on a local root, and
        S3 copies the object on the server (no bytes through this process)."""
        src, dst = self.path(key), self.path(dest)
        if self.is_local:
            Path(dst).parent.mkdir(parents=True, exist_ok=True)
            Path(dst).unlink(missing_ok=True)
            try:
                os.link(src, dst)
                return
            except OSError:  # a filesystem without hard links: a copy of the same bytes
                pass
        self.filesystem.copy_file(src, dst)

    def list_dirs(self, key: str = "") -> list[str]:
        """Names of the folders (S3: common prefixes) directly under `key`, sorted; [] if none."""
        selector = pafs.FileSelector(self.path(key), allow_not_found=True)
        found = self.filesystem.get_file_info(selector)
        return sorted(i.base_name for i in found if i.type == pafs.FileType.Directory)

    def delete_dir(self, key: str) -> None:
        """Remove the folder and everything under it; nothing if there is none."""
        with suppress(FileNotFoundError):
            self.filesystem.delete_dir(self.path(key))
