"""What query time loads from a namespace, built once per process and kept while the tables are unchanged.

Local search used to read every graph table on every question (1.4 s of its 1.5 s on MuSiQue). Here a
loaded structure is kept per (storage, namespace, kind) together with the versions of the tables it was
built from: Parquet files by modification time and size, LanceDB tables by their version number. Each
query asks for the versions again (a few stat calls) and rebuilds only when a re-index has landed, so
the service, the CLI and the query assets all see a new index on their next question.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pipeline.io.store import NamespaceStore

T = TypeVar("T")

# A service answering many namespaces keeps the most recently used ones, each with every structure its
# questions built (about twenty kinds once every mode has been asked: counted per structure, a limit of 16
# evicted a namespace's own first structures while its last ones were built, and two namespaces took turns
# rebuilding). The MuSiQue index (1,890 passages, 10,800 entities) takes about 150 MB for local search's
# structures, so 8 namespaces stay inside a laptop's RAM.
MAX_NAMESPACES = 8

# A loaded index is millions of Python objects that live until its tables change, and each of Python's full
# collections walks all of them with every thread stopped: 0.1-0.6 s a pass on the 11 MB index, which under
# bench/bench_serve_load.py landed on whatever queries were in flight. A long-running server
# (`graphrag-serve`) therefore freezes what it holds after each build; elsewhere (CLI, tests, Dagster) a
# process builds few indexes and a full collection after each would only cost time.
_freeze_after_build = False

_lock = threading.Lock()
_entries: dict[tuple[str, str], tuple[tuple[Any, ...], Any]] = {}
_used: OrderedDict[str, None] = OrderedDict()  # the namespaces held, least recently used first
_building: dict[tuple[str, str], threading.Lock] = {}


def table_versions(
    store: NamespaceStore, parquet: Iterable[str] = (), lance: Iterable[str] = (), files: Iterable[str] = ()
) -> tuple[Any, ...]:
    """A key that changes whenever one of these tables or files is rewritten (absent ones count as None)."""
    key: list[Any] = []
    for file in [*(f"{name}.parquet" for name in parquet), *files]:
        key.append((file, store.file_modified(file), store.file_size(file)) if store.has_file(file) else None)
    for name in lance:
        version = store.lance_version(name)
        key.append((name, version) if version is not None else None)
    return tuple(key)


def cached_index(store: NamespaceStore, kind: str, versions: tuple[Any, ...], build: Callable[[], T]) -> T:
    """The structure `build()` made for these table `versions`, built at most once per version.

    Concurrent queries for the same namespace wait for one build instead of each building its own."""
    slot = (str(store.uri), kind)
    with _lock:
        hit = _entries.get(slot)
        if hit is not None and hit[0] == versions:
            _touch(slot[0])
            return hit[1]
        building = _building.setdefault(slot, threading.Lock())
    with building:
        with _lock:
            hit = _entries.get(slot)
            if hit is not None and hit[0] == versions:
                return hit[1]
        hit = None  # a replaced version must not stay reachable from here while it is collected
        value = build()
        with _lock:
            _entries[slot] = (versions, value)
            _touch(slot[0])
            while len(_used) > MAX_NAMESPACES:
                _evict(next(iter(_used)))
        if _freeze_after_build:
            # Unfrozen first, so that the collection frees a replaced version's reference cycles too.
            gc.unfreeze()
            gc.collect()
            gc.freeze()
        return value


def _touch(namespace: str) -> None:
    _used[namespace] = None
    _used.move_to_end(namespace)


def _evict(namespace: str) -> None:
    """Forget every structure of `namespace` (under `_lock`)."""
    _used.pop(namespace, None)
    for slot in [s for s in _entries if s[0] == namespace]:
        del _entries[slot]


def held_versions(store: NamespaceStore) -> dict[str, tuple[Any, ...]]:
    """Each kind of structure held for `store`'s namespace, with the table versions it was built from
    (what a warm start loaded, for its status and its tests)."""
    uri = str(store.uri)
    with _lock:
        return {kind: versions for (held, kind), (versions, _) in _entries.items() if held == uri}


def freeze_indexes_after_build(enabled: bool = True) -> None:
    """Keep every loaded index out of the garbage collector's full passes (`gc.freeze` after each build,
    with one full collection first). For a process that serves queries for hours."""
    global _freeze_after_build
    _freeze_after_build = enabled
