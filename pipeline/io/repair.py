"""Finding and clearing damaged tables of a namespace: the checks that read every table's footer, the
diagnosis a door asks for after an unexpected error, and the clean-up an index run does first so that
the damaged tables' stages rebuild them. Apart from `pipeline.io.damage`, which the store itself imports."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pipeline.io.damage import (
    KIND_NAMES,
    LANCE_DIR,
    LANCE_UNREADABLE,
    PARQUET_UNREADABLE,
    IndexDamaged,
    read_parquet_rows,
)
from pipeline.io.store import NamespaceStore

log = logging.getLogger(__name__)


def _read_parquet_footer(store: NamespaceStore, name: str) -> None:
    with store.open_input_file(f"{name}.parquet") as source:
        read_parquet_rows(source, store.namespace, name)


def _scan_lance(store: NamespaceStore, name: str) -> None:
    """Read one column of every row: opens the manifest and every data file's footer, which a file cut
    short lacks. The first column is enough: Lance keeps a footer per file, not per column."""
    table = store.open_lance_table(name)
    column = table.schema.names[0]
    table.search().select([column]).to_arrow()


def _parquet_tables(store: NamespaceStore) -> list[str]:
    """The Parquet tables `store` reads: the namespace's files, and a pinned view's frozen ones."""
    names = {f.removesuffix(".parquet") for f in store.files("", ".parquet")}
    pin = getattr(store, "manifest", None)
    if pin is not None:
        names |= {f.removesuffix(".parquet") for f in pin.files if f.endswith(".parquet")}
    return sorted(n for n in names if store.has_table(n))


def _lance_tables(store: NamespaceStore) -> list[str]:
    # Listed only where the folder exists: connecting to a local folder would create it.
    if not store.storage.is_dir(f"{store.namespace}/{LANCE_DIR}"):
        return []
    return sorted(n for n in store.lancedb().list_tables().tables if store.has_lance_table(n))


def _checks(store: NamespaceStore) -> list[tuple[str, str, Callable[[], None]]]:
    """(kind, table, a read that raises when the table is damaged) for every table the store sees."""
    checks: list[tuple[str, str, Callable[[], None]]] = []
    for name in _parquet_tables(store):
        checks.append(("parquet", name, lambda n=name: _read_parquet_footer(store, n)))
    for name in _lance_tables(store):
        checks.append(("lancedb", name, lambda n=name: _scan_lance(store, n)))
    return checks


def find_damage(store: NamespaceStore) -> list[IndexDamaged]:
    """Every damaged table of the namespace (as `store` reads it: a pinned view its committed files)."""
    found: list[IndexDamaged] = []
    for kind, name, check in _checks(store):
        try:
            check()
        except IndexDamaged as exc:
            found.append(exc)
        except Exception as exc:  # noqa: BLE001 - any failure to read an existing table is damage
            damaged = IndexDamaged(
                store.namespace, name, kind, PARQUET_UNREADABLE if kind == "parquet" else LANCE_UNREADABLE
            )
            damaged.__cause__ = exc
            found.append(damaged)
    return found


def diagnose(store: NamespaceStore | None) -> IndexDamaged | None:
    """After a query failed with an error no door expects: the damaged table that explains it, if any.
    Never raises (a failure to look is no diagnosis)."""
    if store is None:
        return None
    try:
        if not store.exists():
            return None
        found = find_damage(store)
    except Exception:  # noqa: BLE001 - the original error is reported instead
        log.debug("damage diagnosis of %r failed", store.namespace, exc_info=True)
        return None
    return found[0] if found else None


def _drop_lance_table(store: NamespaceStore, name: str) -> None:
    try:
        store.lancedb().drop_table(name)
    except Exception:  # noqa: BLE001 - too damaged for LanceDB to drop: its folder goes instead
        storage = store.storage
        storage.filesystem.delete_dir(storage.path(f"{store.namespace}/{LANCE_DIR}/{name}.lance"))


def clear_damage(store: NamespaceStore, say: Callable[[str], None] | None = None) -> list[IndexDamaged]:
    """Remove the namespace's damaged tables before an index run, so that their stages rebuild them
    from their inputs; returns what was removed (each is also logged, and told to `say`)."""
    if not store.exists():
        return []
    found = find_damage(store)
    for damage in found:
        if damage.kind == "parquet":
            store.delete_file(f"{damage.table}.parquet")
        else:
            _drop_lance_table(store, damage.table)
        message = (
            f"{KIND_NAMES[damage.kind]} table {damage.table!r} was damaged ({damage.reason}): removed, "
            f"the {damage.stage or 'writing'} stage rebuilds it"
        )
        if say is not None:
            say(message)
        else:
            log.warning("namespace %r: %s", store.namespace, message)
    return found
