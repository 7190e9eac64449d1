"""API keys per tenant, stored as sha256 digests, each mapped to the namespaces it may read.

The keys file (YAML or JSON, named by `PIPELINE_API_KEYS_FILE`)::

    tenants:
      acme:
        key_sha256: 3b4c...            # or a list, to rotate keys without downtime
        namespaces: [acme-docs, demo]

`python -m pipeline.service hash-key` prints the digest of a key read from stdin (`--generate` makes
a new random key). A plain key is held only while a request is checked: never stored, never logged.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.namespace import InvalidNamespaceError, validate_namespace
from pipeline.service.errors import Forbidden, Unauthorized

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
KEY_HEADER = "x-api-key"


class KeysFileError(ValueError):
    """The keys file is missing or malformed; the message names the file and the entry."""


def hash_key(key: str) -> str:
    """The digest stored at rest. API keys are long random tokens, so an unsalted sha256 suffices."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def generate_key() -> str:
    return "grk_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Principal:
    """Who is asking: the tenant, a short id of the key (safe to log) and the namespaces it covers."""

    tenant: str
    key_id: str
    namespaces: frozenset[str]

    def authorize(self, namespace: str) -> str:
        if namespace not in self.namespaces:
            raise Forbidden(f"this API key may not read namespace {namespace!r}")
        return namespace


class KeyRing:
    """Digest -> Principal, built from the keys file's mapping."""

    def __init__(self, tenants: Mapping[str, Any], source: str = "<keys>") -> None:
        self._by_digest: dict[str, Principal] = {}
        if not isinstance(tenants, Mapping):
            raise KeysFileError(f"{source}: expected a mapping of tenant -> {{key_sha256, namespaces}}")
        for tenant, entry in tenants.items():
            where = f"{source}: tenant {tenant!r}"
            if not isinstance(entry, Mapping):
                raise KeysFileError(f"{where}: expected {{key_sha256, namespaces}}")
            digests = entry.get("key_sha256")
            digests = [digests] if isinstance(digests, str) else digests
            if not digests or not all(isinstance(d, str) and _DIGEST.match(d.lower()) for d in digests):
                raise KeysFileError(
                    f"{where}: key_sha256 must be a 64-hex-digit sha256 digest (or a list of them); "
                    "make one with `python -m pipeline.service hash-key`"
                )
            namespaces = entry.get("namespaces") or []
            if not isinstance(namespaces, list):
                raise KeysFileError(f"{where}: namespaces must be a list")
            try:
                allowed = frozenset(validate_namespace(n) for n in namespaces)
            except InvalidNamespaceError as exc:
                raise KeysFileError(f"{where}: {exc}") from None
            for digest in digests:
                digest = digest.lower()
                if digest in self._by_digest:
                    raise KeysFileError(f"{where}: a key digest is already used by another entry")
                self._by_digest[digest] = Principal(str(tenant), digest[:12], allowed)

    @classmethod
    def from_file(cls, path: str | Path) -> KeyRing:
        p = Path(path)
        if not p.is_file():
            raise KeysFileError(f"API keys file {str(p)!r} does not exist (setting PIPELINE_API_KEYS_FILE)")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}  # YAML is a superset of JSON
        except yaml.YAMLError as exc:
            raise KeysFileError(f"{p}: not valid YAML/JSON: {exc}") from None
        if isinstance(data, Mapping) and "tenants" in data:
            data = data["tenants"]
        return cls(data, source=str(p))

    def __len__(self) -> int:
        return len(self._by_digest)

    def lookup(self, key: str | None) -> Principal:
        if not key:
            raise Unauthorized("an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key'")
        principal = self._by_digest.get(hash_key(key))
        if principal is None:
            raise Unauthorized()
        return principal


class KeyStore:
    """The keys file, re-read when it changes on disk, so keys can be added or revoked without a restart."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._ring = KeyRing({})
        self.reload()

    def reload(self) -> KeyRing:
        if self.path is None:
            return self._ring  # no keys file: every request is refused with 401
        stat = self.path.stat() if self.path.is_file() else None
        stamp = (stat.st_mtime_ns, stat.st_size) if stat else None
        with self._lock:
            if stamp != self._stamp or stamp is None:
                self._ring = KeyRing.from_file(self.path)
                self._stamp = stamp
            return self._ring

    def authenticate(self, key: str | None) -> Principal:
        try:
            ring = self.reload()
        except (KeysFileError, OSError):
            ring = self._ring  # a bad edit keeps the last good keys rather than locking everyone out
        return ring.lookup(key)


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    """`Authorization: Bearer <key>` or `X-API-Key: <key>` (header names case-insensitive)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return (lowered.get(KEY_HEADER) or "").strip() or None
