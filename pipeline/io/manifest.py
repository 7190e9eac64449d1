"""One committed version of a namespace's index per answer.

An index run replaces its tables one stage after another: for a while `entities.parquet` is new and
`community_reports.parquet` old, the LanceDB `text_units` table holds the new text and `text_units.parquet`
the old. A question answered in that window, or one whose reads straddle a write, could cite both texts
of a changed document. Each table was always whole; the set of them was not.

The design, the least that guarantees it without moving any table:

- **Writers are unchanged.** Stages keep replacing `<namespace>/<table>.parquet` atomically under its
  plain name (what Microsoft GraphRAG's readers, the export and every tool expect) and committing LanceDB
  versions.
- **A run ends by committing a manifest** (`commit_manifest`; `pipeline.index.run.index_folder` and the
  Dagster `index_version` asset call it after every other stage succeeded). It freezes each index file
  (`PINNED_FILES`) into `_versions/<n>/<name>`: a hard link on a local root (no bytes copied: writers
  replace files, so the linked inode is never written again), a server-side copy on S3. It records each
  LanceDB table's version number, and then writes `_manifest.json` atomically (temp file in the same
  folder, fsync, rename; one PUT on S3). Until that rename readers see the previous manifest, whole.
- **Readers pin.** `NamespaceStore.pinned()` reads the manifest once and gives a view that reads the
  frozen files and opens LanceDB tables at the recorded versions (`table.checkout(v)`). The query entry
  points (`pipeline.runtime.query_runtime`, the service's per-request store) take one view per question,
  so every table an answer reads comes from one committed version, however long it takes. An index file
  the manifest lacks is absent to the view, even if a running re-index has written it since.
- **Grace.** The frozen files of the newest `GRACE_VERSIONS` manifests are kept, older folders deleted
  at each commit, and likewise the LanceDB versions they name: each is tagged (`COMMITTED_TAG`), a
  replace keeps every version from the oldest tagged one on (`NamespaceStore.replace_lance_table`), and
  the tag makes Lance itself refuse to delete it, should its time-based cleanup reach it. A question can thus outlive the commit of a newer version, but
  not the whole of a later run beyond that.
- **Namespaces without a manifest** (indexed before this, or never finished) are read as before, from
  the current files. A damaged manifest is logged and read the same way: it loses the pin, not the answer.

Writes that are not a whole run (one asset materialized from the UI) reach queries at the next commit.
One exception completes a version without changing what it is built from: a community report written on
first use (`PIPELINE_REPORTS=on_demand`) replaces its stand-in in the frozen `community_reports` copy of the
version the question read, built from that version's own tables (`write_table(committed=True)`: a new
file, so the current file linked to the old copy keeps its bytes).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.core.schema import CHUNK_GRAPH_SNAPSHOT
from pipeline.core.tables import INDEX_TABLES
from pipeline.io.storage import StorageRoot

log = logging.getLogger(__name__)

MANIFEST = "_manifest.json"
# Prefix of the LanceDB tags on the versions the kept manifests name (`<prefix>-<n>` for manifest n):
# Lance refuses to clean up a tagged version, so a pinned reader's version survives pruning whatever the
# clocks (`pipeline.io.lance_versions.prune_versions`), and a replace knows which versions to keep from its tags.
COMMITTED_TAG = "graphrag-committed"
VERSIONS_DIR = "_versions"
FORMAT = 1
# Newest committed versions whose frozen files are kept: the current one, and two a slow question may
# still be reading.
GRACE_VERSIONS = 3

PINNED_FILES: frozenset[str] = frozenset({f"{t}.parquet" for t in INDEX_TABLES} | {CHUNK_GRAPH_SNAPSHOT})
"""The namespace's files a query reads and an index run writes: read through the manifest when pinned."""


class NamespaceStore(Protocol):
    """What this module needs of `pipeline.io.store.NamespaceStore` (which imports this module)."""

    namespace: str
    storage: StorageRoot

    def has_lance_dir(self) -> bool: ...

    def lancedb(self) -> Any: ...


@dataclass(frozen=True)
class Manifest:
    """One committed version of a namespace's index."""

    version: int
    files: dict[str, str] = field(default_factory=dict)  # plain name -> its frozen copy's name
    lance: dict[str, int] = field(default_factory=dict)  # LanceDB table -> version number
    written_at: str = ""

    def to_json(self) -> bytes:
        body = {
            "format": FORMAT,
            "version": self.version,
            "written_at": self.written_at,
            "files": self.files,
            "lance": self.lance,
        }
        return json.dumps(body, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        body = json.loads(data)
        if body.get("format") != FORMAT:
            raise ValueError(f"unknown manifest format {body.get('format')!r}")
        return cls(
            version=int(body["version"]),
            files={str(k): str(v) for k, v in body["files"].items()},
            lance={str(k): int(v) for k, v in body["lance"].items()},
            written_at=str(body.get("written_at", "")),
        )


def read_manifest(store: NamespaceStore) -> Manifest | None:
    """The namespace's committed version; None when it has none (or it cannot be read: then logged)."""
    key = f"{store.namespace}/{MANIFEST}"
    try:
        if not store.storage.is_file(key):
            return None
        return Manifest.from_json(store.storage.read_bytes(key))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning(
            "namespace %r: its index manifest %s cannot be read (%s); reading the current tables "
            "unpinned until the next index run rewrites it",
            store.namespace,
            MANIFEST,
            type(exc).__name__,
        )
        return None


def commit_manifest(store: NamespaceStore, grace: int = GRACE_VERSIONS) -> Manifest:
    """Publish the namespace's current tables as its next committed version (see the module docstring).

    Called when a run has written every table; the namespace lock keeps other runs out meanwhile."""
    if grace < 1:
        raise ValueError(f"grace must be at least 1, got {grace}")
    storage, ns = store.storage, store.namespace
    previous = read_manifest(store)
    # Past every folder too: one left by a commit that died before its manifest was never read, and a
    # damaged manifest must not start the numbers again below folders and tags still kept.
    folders = [int(n) for n in storage.list_dirs(f"{ns}/{VERSIONS_DIR}") if n.isdigit()]
    version = max([previous.version if previous else 0, *folders]) + 1
    folder = f"{VERSIONS_DIR}/{version:08d}"
    files: dict[str, str] = {}
    for name in sorted(PINNED_FILES):
        if storage.is_file(f"{ns}/{name}"):
            storage.freeze_copy(f"{ns}/{name}", f"{ns}/{folder}/{name}")
            files[name] = f"{folder}/{name}"
    tables = _lance_tables(store)
    lance: dict[str, int] = {}
    tag = f"{COMMITTED_TAG}-{version}"
    for name, table in tables.items():
        lance[name] = int(table.version)
        if tag in table.tags.list():  # left by a commit that died before its manifest
            table.tags.update(tag, lance[name])
        else:
            table.tags.create(tag, lance[name])
    manifest = Manifest(
        version=version,
        files=files,
        lance=lance,
        written_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    storage.write_durable(f"{ns}/{MANIFEST}", manifest.to_json())
    for name in storage.list_dirs(f"{ns}/{VERSIONS_DIR}"):
        if name.isdigit() and int(name) <= version - grace:
            storage.delete_dir(f"{ns}/{VERSIONS_DIR}/{name}")
    for table in tables.values():
        for old in committed_tags(table):
            if old <= version - grace:
                table.tags.delete(f"{COMMITTED_TAG}-{old}")
    return manifest


def committed_tags(table: Any) -> dict[int, int]:
    """manifest number -> the LanceDB version it names, from the table's tags."""
    found: dict[int, int] = {}
    for tag, info in table.tags.list().items():
        number = tag.removeprefix(f"{COMMITTED_TAG}-")
        if tag.startswith(f"{COMMITTED_TAG}-") and number.isdigit():
            found[int(number)] = int(info["version"])
    return found


def _lance_tables(store: NamespaceStore) -> dict[str, Any]:
    if not store.has_lance_dir():
        return {}
    db: Any = store.lancedb()
    return {name: db.open_table(name) for name in sorted(db.list_tables().tables)}
