"""Which namespaces the service may write, and where their files and records live.

A namespace created with `POST /v1/namespaces` is *managed*: the service owns its input folder
`<input_root>/<ns>/` (the folder `pipeline index` and the input sensor read) and writes a marker there
naming the tenant that created it. A namespace indexed from an operator's own folder stays read-only
through the API unless the operator lists it in `service_upload_namespaces`.

The service's own records (the marker, the change log, the run records) live in the hidden folder
`.graphrag/` inside the input folder: ingest and the sensor's fingerprint skip hidden names, so they are
never read as documents and writing them triggers no run.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

from pipeline.core.namespace import validate_namespace
from pipeline.io.local_json import read_json, write_json
from pipeline.service.errors import Forbidden, ServiceError
from pipeline.settings import Settings

STATE = ".graphrag"
MARKER = "namespace.json"


class NamespaceExists(ServiceError):
    status, code = 409, "namespace_exists"


def input_folder(settings: Settings, namespace: str) -> Path:
    return Path(settings.input_root) / validate_namespace(namespace)


def state_folder(settings: Settings, namespace: str) -> Path:
    return input_folder(settings, namespace) / STATE


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


class ManagedNamespaces:
    """The namespaces created through the API, by owning tenant (read from their markers, re-read when the
    input root changes), and the ones the operator opened to uploads."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._seen: tuple[int, dict[str, str]] | None = None  # (input root's mtime_ns, ns -> owner)

    def owners(self) -> dict[str, str]:
        root = Path(self.settings.input_root)
        try:
            stamp = root.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        with self._lock:
            if self._seen is not None and self._seen[0] == stamp:
                return self._seen[1]
        found: dict[str, str] = {}
        for child in root.iterdir():
            marker = read_json(child / STATE / MARKER) if child.is_dir() else None
            if isinstance(marker, dict) and isinstance(marker.get("owner"), str):
                found[child.name] = marker["owner"]
        with self._lock:
            self._seen = (stamp, found)
        return found

    def owned_by(self, tenant: str) -> frozenset[str]:
        return frozenset(ns for ns, owner in self.owners().items() if owner == tenant)

    def writable(self, namespace: str) -> bool:
        """Whether the service may change this namespace's input folder at all (any key's grant aside)."""
        return namespace in self.owners() or namespace in self.settings.service_upload_namespaces

    def check_writable(self, namespace: str) -> None:
        if not self.writable(namespace):
            raise Forbidden(
                f"namespace {namespace!r} is indexed from an operator's folder: its documents are changed "
                "there, not through the API (the operator can open it to uploads with "
                "PIPELINE_SERVICE_UPLOAD_NAMESPACES)"
            )

    def create(self, namespace: str, tenant: str, key_id: str) -> dict[str, Any]:
        """Make `namespace`'s input folder and mark it the tenant's; NamespaceExists when the name is taken
        (a folder under the input root, or an index in the storage root, of anyone)."""
        from pipeline.io.store import NamespaceStore

        folder = input_folder(self.settings, namespace)
        if NamespaceStore.from_settings(self.settings, namespace).exists():
            raise NamespaceExists(f"namespace {namespace!r} already exists")
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir()  # atomic: of two creations of one name, one wins
        except FileExistsError:
            raise NamespaceExists(f"namespace {namespace!r} already exists") from None
        record = {"namespace": namespace, "owner": tenant, "created_at": now(), "created_by": key_id}
        write_json(folder / STATE / MARKER, record)
        with self._lock:
            self._seen = None
        return record
