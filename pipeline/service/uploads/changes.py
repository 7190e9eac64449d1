"""Every change to a namespace's documents through the service, one JSON line each, in order.

Who (the tenant and the key's short id, never the key), what (upload, replace, delete, retry), which
document (id and name, with the bytes' size, sha256 and sniffed type), when, and the run that takes it
in. The document statuses are read from it with the runs' records; operators read it as an audit log at
`<input_root>/<ns>/.graphrag/changes.jsonl`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from pathlib import Path
from typing import Any

from pipeline.service.auth import Principal
from pipeline.service.uploads.folders import now, state_folder
from pipeline.settings import Settings

ACTIONS = ("upload", "replace", "delete", "retry")
_lock = threading.Lock()


def file_id(name: str) -> str:
    """A document's id in the documents API: its file's place in the input folder, stable across its
    replacements and known before its text is (the index's own document id is its text's sha256)."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:24]


def log_path(settings: Settings, namespace: str) -> Path:
    return state_folder(settings, namespace) / "changes.jsonl"


def change(
    action: str,
    name: str,
    by: Principal,
    *,
    size: int | None = None,
    sha256: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    assert action in ACTIONS
    return {
        "id": secrets.token_hex(6),
        "at": now(),
        "by": {"tenant": by.tenant, "key_id": by.key_id},
        "action": action,
        "document": file_id(name),
        "name": name,
        "size": size,
        "sha256": sha256,
        "type": kind,
        "run": None,
    }


def append(settings: Settings, namespace: str, entries: list[dict[str, Any]]) -> None:
    path = log_path(settings, namespace)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
    with _lock, open(path, "a", encoding="utf-8") as handle:
        handle.write(lines)  # one write per request: a reader never sees a request half logged


def read(settings: Settings, namespace: str) -> list[dict[str, Any]]:
    path = log_path(settings, namespace)
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a crash mid-write: the lines before and after still count
    return out


def latest(settings: Settings, namespace: str) -> dict[str, dict[str, Any]]:
    """Each document's last change, by document id."""
    return {entry["document"]: entry for entry in read(settings, namespace)}
