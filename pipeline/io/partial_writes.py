"""Files a killed write left behind: `StorageRoot.open_output` and `write_durable` write a local file
beside its target as `.<name>.<uuid>.tmp` and rename it over the target, so a process killed between the
two (a `kill -9` of `pipeline index`) leaves the temporary file for ever. Its target is the old version
or none, which the re-run rewrites; the temporary file is garbage and is removed before the next run,
under the namespace's lock (no writer of the namespace can be running then). On S3 a write is one PUT
and leaves nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pipeline.io.store import NamespaceStore

log = logging.getLogger(__name__)

PATTERN = ".*.tmp"
LANCE_DIR = "lancedb"  # LanceDB's own files, which it manages itself


def remove_partial_writes(store: NamespaceStore, say: Callable[[str], None] | None = None) -> list[Path]:
    """Delete the namespace's leftover temporary files (module docstring); returns them."""
    if not store.storage.is_local:
        return []
    root = Path(store.storage.path(store.namespace))
    if not root.is_dir():
        return []
    found = sorted(p for p in root.rglob(PATTERN) if LANCE_DIR not in p.relative_to(root).parts)
    for path in found:
        path.unlink(missing_ok=True)
    if found:
        message = f"removed {len(found)} half-written file(s) an earlier run left (killed?)"
        if say is not None:
            say(message)
        else:
            log.warning("namespace %r: %s", store.namespace, message)
    return found
