"""The interface every vector store of the tool implements, and the result row they all return."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from pipeline.core.rrf import reciprocal_rank_fusion

log = logging.getLogger(__name__)


class StoreError(RuntimeError):
    """A store could not answer: missing index, bad option, server error. The message says which."""


@dataclass
class QueryResult:
    id: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | None = None
    document: str | None = None

    def source(self) -> dict[str, Any]:
        """The tool's source shape: {id, metadata, vector, score, document}."""
        return {
            "id": self.id,
            "metadata": self.metadata,
            "vector": list(self.vector) if self.vector is not None else [],
            "score": float(self.score),
            "document": self.document or "",
        }


@dataclass
class IndexRows:
    """Every row of an index, for building a chunk graph over it."""

    ids: list[str]
    documents: list[str]
    metadata: list[dict[str, Any]]
    vectors: np.ndarray


@runtime_checkable
class VectorStore(Protocol):
    """What the tool needs from a store. ``params`` are the store's own options (see options.py)."""

    store_type: str

    @property
    def identity(self) -> str:
        """Where the data lives (path, server + schema): two stores with the same identity share rows."""
        ...

    def query(
        self,
        index_name: str,
        query_vector: Sequence[float],
        top_k: int,
        *,
        filter: Mapping[str, Any] | None = None,
        include_vector: bool = False,
        query_text: str | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        """Nearest rows, best first; ``score`` is higher for closer rows."""
        ...

    def text_query(
        self, index_name: str, query_text: str, top_k: int, *, filter: Mapping[str, Any] | None = None
    ) -> list[QueryResult]:
        """Full-text matches, best first (for hybrid search)."""
        ...

    def index_rows(self, index_name: str) -> IndexRows: ...

    def index_fingerprint(self, index_name: str) -> str:
        """Changes whenever the index's rows change (used to rebuild derived graphs)."""
        ...


def is_vector_store(value: Any) -> bool:
    return (
        value is not None
        and isinstance(getattr(value, "store_type", None), str)
        and callable(getattr(value, "query", None))
    )


def fuse_rrf(rankings: Sequence[Sequence[QueryResult]], top_k: int, k: int = 60) -> list[QueryResult]:
    """Reciprocal Rank Fusion of result lists; a row keeps its first-seen fields, ``score`` = RRF score."""
    rows: dict[str, QueryResult] = {}
    for ranking in rankings:
        for r in ranking:
            rows.setdefault(r.id, r)
    fused = reciprocal_rank_fusion([[r.id for r in ranking] for ranking in rankings], k=k)
    out = []
    for row_id, score in fused[:top_k]:
        row = rows[str(row_id)]
        out.append(QueryResult(row.id, score, row.metadata, row.vector, row.document))
    return out


def own_params(store_type: str, params: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    """The options this store applies. Others (an unknown store type's flat pass-through) are ignored,
    as a store that does not take a parameter ignores it in Mastra."""
    extra = sorted(set(params) - known)
    if extra:
        log.debug("%s store: ignoring query options %s", store_type, extra)
    return {k: v for k, v in params.items() if k in known}


@dataclass(frozen=True)
class StoreQuery:
    """One ``VectorStore.query`` call as a store here answers it: the tool's arguments, and of its
    ``params`` only the options this store applies."""

    index_name: str
    vector: Sequence[float]
    top_k: int
    filter: Mapping[str, Any] | None
    include_vector: bool
    query_text: str | None
    options: dict[str, Any]


class StoreBase:
    """``VectorStore.query`` as the stores here share it: the call's options are narrowed to the store's
    own (``known_options``, see ``own_params``) in this one place, then ``_query`` searches."""

    store_type: str
    known_options: ClassVar[set[str]]

    def query(
        self,
        index_name: str,
        query_vector: Sequence[float],
        top_k: int,
        *,
        filter: Mapping[str, Any] | None = None,
        include_vector: bool = False,
        query_text: str | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        """Nearest rows, best first; ``score`` is higher for closer rows."""
        options = own_params(self.store_type, params, self.known_options)
        return self._query(
            StoreQuery(index_name, query_vector, top_k, filter, include_vector, query_text, options)
        )

    def _query(self, q: StoreQuery) -> list[QueryResult]:
        raise NotImplementedError
