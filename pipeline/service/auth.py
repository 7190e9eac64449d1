"""API keys per tenant, stored as sha256 digests, each mapped to the namespaces it may read.

The keys file (YAML or JSON, named by `PIPELINE_API_KEYS_FILE`)::

    tenants:
      acme:
        key_sha256: 3b4c...            # or a list, to rotate keys without downtime
        namespaces: [acme-docs, demo]
        write: [acme-docs]             # optional: true (every namespace of the tenant) or a list
      acme-reader:
        tenant: acme                   # optional: a key of tenant acme with other grants
        key_sha256: 9f2e...
        namespaces: [acme-docs]        # no `write`: this key reads only

A key reads only unless its entry grants writing: `write: true` lets it change the documents of every
namespace it may read and create namespaces (`POST /v1/namespaces`, which become the tenant's); `write:
[ns, ...]` lets it change those namespaces' documents only.

`python -m pipeline.service hash-key` prints the digest of a key read from stdin (`--generate` makes
a new random key). A plain key is held only while a request is checked: never stored, never logged.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.namespace import InvalidNamespaceError, validate_namespace
from pipeline.service.errors import Forbidden, ServiceError, Unauthorized

_DIGEST = re.compile(r"[0-9a-f]{64}")
KEY_HEADER = "x-api-key"
log = logging.getLogger("pipeline.service")


class KeysFileError(ValueError):
    """The keys file is missing, unreadable or malformed; the message names the file and the entry (never
    a value from it), `reason` says which of the three for the refusal's body."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        if message is None:  # KeysFileError(message): a malformed entry
            reason, message = "invalid entry", reason
        super().__init__(message)
        self.reason = reason


class KeysUnavailable(ServiceError):
    """Every key is refused: the keys file cannot be used, so no key can be told valid or revoked."""

    status, code = 503, "keys_unavailable"

    def __init__(self, reason: str) -> None:
        # The body says why, not where or which entry: the operator's log names both.
        state = {"invalid entry": "not valid (an invalid entry; the server's log names it)"}.get(
            reason, reason
        )
        super().__init__(
            f"the server's API keys file is {state}; every key is refused until it is fixed",
            detail={"reason": reason},
        )


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
    writes_all: bool = False  # `write: true`: every namespace it reads, and new ones
    writes: frozenset[str] = frozenset()  # `write: [ns, ...]`

    def authorize(self, namespace: str) -> str:
        if namespace not in self.namespaces:
            raise Forbidden(f"this API key may not read namespace {namespace!r}")
        return namespace

    def authorize_write(self, namespace: str) -> str:
        """The namespace, when this key may change its documents; Forbidden otherwise (a read-only key,
        or another tenant's namespace)."""
        self.authorize(namespace)
        if not self.may_write(namespace):
            raise Forbidden(
                f"this API key may read namespace {namespace!r} but not change it (read-only key)"
            )
        return namespace

    def may_write(self, namespace: str) -> bool:
        return namespace in self.namespaces and (self.writes_all or namespace in self.writes)

    def with_namespaces(self, extra: frozenset[str]) -> Principal:
        """This key with the namespaces its tenant created through the API added (they are the tenant's,
        so a `write: true` key writes them too)."""
        if extra <= self.namespaces:
            return self
        return replace(self, namespaces=self.namespaces | extra)


def _write_grant(value: Any, where: str) -> tuple[bool, frozenset[str]]:
    """`write: true | false | [ns, ...]` as (every namespace, these namespaces)."""
    if isinstance(value, bool):
        return value, frozenset()
    if not isinstance(value, list):
        raise KeysFileError(f"{where}: write must be true, false or a list of namespaces")
    try:
        return False, frozenset(validate_namespace(n) for n in value)
    except InvalidNamespaceError as exc:
        raise KeysFileError(f"{where}: write: {exc}") from None


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
            if not digests or not all(isinstance(d, str) and _DIGEST.fullmatch(d.lower()) for d in digests):
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
            writes_all, writes = _write_grant(entry.get("write", False), where)
            owner = entry.get("tenant", tenant)  # entries of one tenant's keys with other grants
            if not isinstance(owner, str) or not owner:
                raise KeysFileError(f"{where}: tenant must be a name")
            for digest in digests:
                digest = digest.lower()
                if digest in self._by_digest:
                    raise KeysFileError(f"{where}: a key digest is already used by another entry")
                self._by_digest[digest] = Principal(owner, digest[:12], allowed, writes_all, writes)

    @classmethod
    def from_bytes(cls, raw: bytes, source: str = "<keys>") -> KeyRing:
        try:
            data = yaml.safe_load(raw.decode("utf-8")) or {}  # YAML is a superset of JSON
        except UnicodeDecodeError:
            raise KeysFileError(f"{source}: not UTF-8 text") from None
        except yaml.YAMLError as exc:
            # Where only: YAML's own message quotes the offending line, which may hold a key.
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise KeysFileError(f"{source}: not valid YAML/JSON{where}") from None
        if isinstance(data, Mapping) and "tenants" in data:
            data = data["tenants"]
        return cls(data, source=source)

    def __len__(self) -> int:
        return len(self._by_digest)

    def namespaces(self) -> frozenset[str]:
        """Every namespace some key may read."""
        return frozenset().union(*(p.namespaces for p in self._by_digest.values()))

    def lookup(self, key: str | None) -> Principal:
        if not key:
            raise Unauthorized("an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key'")
        principal = self._by_digest.get(hash_key(key))
        if principal is None:
            raise Unauthorized()
        return principal


class KeyStore:
    """The keys file, re-read when it changes on disk, so keys can be added or revoked without a restart.

    It fails closed: while the file is missing, unreadable or has any invalid entry, every key is refused
    (`KeysUnavailable`, 503) rather than served from the last good copy, which would keep a revoked key
    working whenever the same edit broke another entry. The file's bytes are read on every request (a
    few KB, one read) and parsed only when they differ from the last read, so a revocation takes effect
    on the key's very next request even when an editor keeps the size and the mtime.
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._raw: bytes | None = None
        self._ring = KeyRing({})
        self._logged: str | None = None  # the failure last logged: one line per change, not per request
        if self.path is not None:
            with contextlib.suppress(KeysUnavailable):  # logged; requests are refused until it is valid
                self.reload()

    def reload(self) -> KeyRing:
        """The current keys; `KeysUnavailable` while the file cannot be used."""
        if self.path is None:
            return self._ring  # no keys file: every request is refused with 401
        try:
            raw: bytes | None = self.path.read_bytes()
            failure = None
        except FileNotFoundError:
            raw, failure = None, KeysFileError("missing", f"API keys file {str(self.path)!r} does not exist")
        except OSError as exc:
            raw = None
            failure = KeysFileError("unreadable", f"API keys file {str(self.path)!r}: {exc.strerror or exc}")
        with self._lock:
            if failure is None and raw != self._raw:
                try:
                    self._ring = KeyRing.from_bytes(raw or b"", source=str(self.path))
                except KeysFileError as exc:
                    failure = exc
            if failure is None:
                self._raw = raw
            else:
                self._raw = None  # read and judged again once it changes
                self._ring = KeyRing({})
            self._report(failure)
            if failure is not None:
                raise KeysUnavailable(failure.reason)
            return self._ring

    def _report(self, failure: KeysFileError | None) -> None:
        text = str(failure) if failure is not None else None
        if text == self._logged:
            return
        if failure is not None:
            log.error("API keys file unusable, refusing every key until it is fixed: %s", text)
        elif self._logged is not None:
            log.warning("API keys file %s is valid again (%d keys)", self.path, len(self._ring))
        self._logged = text

    def authenticate(self, key: str | None) -> Principal:
        return self.reload().lookup(key)

    def namespaces(self) -> frozenset[str]:
        """Every namespace the keys file names; none while it cannot be used."""
        try:
            return self.reload().namespaces()
        except KeysUnavailable:
            return frozenset()


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    """`Authorization: Bearer <key>` or `X-API-Key: <key>` (header names case-insensitive)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    auth = lowered.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return (lowered.get(KEY_HEADER) or "").strip() or None
