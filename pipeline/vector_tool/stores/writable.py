"""Writing to a store (pgvector, Chroma; LanceDB's rows are the index's own): ``upsert``'s arguments are
taken in one place, as ``query``'s are in ``base.StoreBase``, and each store's ``_upsert`` writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.vector_tool.stores.base import StoreBase


@dataclass(frozen=True)
class StoreRows:
    """One ``upsert`` call's rows as a store here writes them: ids as text, the rest as the call gave it
    (metadata and documents None when it gave none)."""

    ids: list[str]
    vectors: np.ndarray | Sequence[Sequence[float]]
    metadata: Sequence[Mapping[str, Any]] | None
    documents: Sequence[str | None] | None


class WritableStoreBase(StoreBase):
    """``StoreBase`` for a store that also takes writes."""

    def upsert(
        self,
        index_name: str,
        ids: Sequence[str],
        vectors: np.ndarray | Sequence[Sequence[float]],
        metadata: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[str | None] | None = None,
    ) -> int:
        """Insert the rows, replacing those whose id is already there; returns how many were written."""
        return self._upsert(index_name, StoreRows([str(i) for i in ids], vectors, metadata, documents))

    def _upsert(self, index_name: str, rows: StoreRows) -> int:
        raise NotImplementedError
