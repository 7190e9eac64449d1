"""Copy a namespace's LanceDB ``text_units`` (rows and vectors) into another store, so pgvector or Chroma
answer over the same text units as LanceDB does."""

from __future__ import annotations

from typing import Any

from pipeline.core.schema import LANCE_TEXT_UNITS
from pipeline.io.store import NamespaceStore
from pipeline.vector_tool.stores.base import StoreError
from pipeline.vector_tool.stores.lancedb import LanceDBStore


def sync_text_units(
    store: Any, namespace_store: NamespaceStore, index_name: str = LANCE_TEXT_UNITS, batch: int = 1000
) -> int:
    """Upsert every text unit of the namespace into ``store``'s ``index_name`` and delete the rows of
    units that no longer exist (a re-index removed them); returns the row count."""
    if not all(hasattr(store, m) for m in ("create_index", "upsert", "delete_except")):
        raise StoreError(f"{store!r} cannot be written to (needs create_index, upsert, delete_except)")
    rows = LanceDBStore(namespace_store).index_rows(LANCE_TEXT_UNITS)
    store.create_index(index_name, rows.vectors.shape[1])
    for start in range(0, len(rows.ids), batch):
        end = start + batch
        store.upsert(
            index_name,
            rows.ids[start:end],
            rows.vectors[start:end],
            rows.metadata[start:end],
            rows.documents[start:end],
        )
    store.delete_except(index_name, rows.ids)
    return len(rows.ids)
