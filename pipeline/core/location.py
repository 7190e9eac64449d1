"""Where a storage root or cache folder points: a local path or an ``s3://bucket/prefix`` URI, parsed and
validated without touching either (settings validate with this; `pipeline.io.storage` opens them)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

SUPPORTED_LOCATIONS = "a local path, file:///absolute/path or s3://bucket/prefix"

# A local file's Path, or a remote object's URI: what messages, metadata and local tools are given.
Location = Path | str

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def split_s3(uri: str) -> tuple[str, str]:
    parts = urlsplit(uri)
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(
            f"invalid storage root {uri!r}: an s3:// URI names a bucket and a prefix only "
            "(credentials go in PIPELINE_S3_ACCESS_KEY_ID / PIPELINE_S3_SECRET_ACCESS_KEY)"
        )
    bucket = parts.netloc
    if not _BUCKET.fullmatch(bucket):
        raise ValueError(
            f"invalid storage root {uri!r}: {bucket!r} is not an S3 bucket name "
            "(3-63 lower-case letters, digits, '.' and '-'); expected s3://bucket/prefix"
        )
    segments = [s for s in parts.path.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise ValueError(f"invalid storage root {uri!r}: the prefix may not contain '.' or '..'")
    return bucket, "/".join(segments)


def parse_location(value: str | os.PathLike[str]) -> Location:
    """A local path as a Path (a relative one stays relative, resolved against the working directory
    when used) or an ``s3://`` URI as a normalised str. Any other scheme is a ValueError."""
    if isinstance(value, os.PathLike):
        return Path(value)
    text = str(value).strip()
    if not text:
        raise ValueError(f"the storage root is empty; use {SUPPORTED_LOCATIONS}")
    if "://" not in text:
        return Path(text)
    scheme = text.split("://", 1)[0].lower()
    if scheme == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"invalid storage root {text!r}: a file:// URI must name a local path")
        return Path(unquote(parts.path))
    if scheme == "s3":
        bucket, prefix = split_s3(text)
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
    raise ValueError(
        f"unsupported storage root {text!r}: scheme {scheme + '://'!r} is not supported; "
        f"use {SUPPORTED_LOCATIONS}"
    )
