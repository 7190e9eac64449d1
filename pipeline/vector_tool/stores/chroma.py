"""Chroma, embedded (``chromadb.PersistentClient``): one collection per index, cosine space.

We always pass our own embeddings, so Chroma's default embedding model (an ONNX download) is never
loaded, and telemetry is off. Options (``database_config["chroma"]``): ``where`` (Chroma's metadata
filter, ANDed with the tool's filter) and ``where_document`` (``{"$contains": "..."}`` and friends).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.vector_tool.filters import to_chroma_where
from pipeline.vector_tool.stores.base import IndexRows, QueryResult, StoreError, StoreQuery
from pipeline.vector_tool.stores.writable import StoreRows, WritableStoreBase

OPTIONS = {"where", "where_document"}


def _scalar_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    # Chroma keeps str/int/float/bool values only; None is dropped, anything else stored as text.
    return {
        k: (v if isinstance(v, str | int | float | bool) else str(v))
        for k, v in metadata.items()
        if v is not None
    }


class ChromaStore(WritableStoreBase):
    store_type = "chroma"
    known_options = OPTIONS
    upsert_batch = 1000  # rows per Chroma call: the client refuses a call over its max batch size

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._client: Any = None

    def __repr__(self) -> str:
        return f"ChromaStore({str(self.path)!r})"

    @property
    def identity(self) -> str:
        return f"chroma:{self.path.resolve()}"

    def client(self) -> Any:
        if self._client is None:
            import chromadb
            from chromadb.config import Settings as ChromaSettings

            self.path.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(
                path=str(self.path), settings=ChromaSettings(anonymized_telemetry=False)
            )
        return self._client

    def _collection(self, index_name: str) -> Any:
        try:
            return self.client().get_collection(index_name, embedding_function=None)
        except Exception as exc:  # chromadb raises NotFoundError / ValueError depending on version
            raise StoreError(f"chroma: no collection {index_name!r} under {self.path}: {exc}") from exc

    def _open(self, index_name: str) -> Any:
        """The index's collection, created in cosine space if it is missing."""
        return self.client().get_or_create_collection(
            index_name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )

    def create_index(self, index_name: str, dimension: int | None = None) -> None:
        self._open(index_name)

    def _upsert(self, index_name: str, rows: StoreRows) -> int:
        collection = self._open(index_name)
        matrix = np.asarray(rows.vectors, dtype=np.float32)
        metadata, documents, batch = rows.metadata, rows.documents, self.upsert_batch
        for start in range(0, len(rows.ids), batch):
            end = start + batch
            collection.upsert(
                ids=rows.ids[start:end],
                embeddings=matrix[start:end],
                metadatas=[_scalar_metadata(m) or None for m in metadata[start:end]] if metadata else None,
                documents=list(documents[start:end]) if documents is not None else None,
            )
        return len(rows.ids)

    def delete_except(self, index_name: str, keep_ids: Sequence[str]) -> int:
        """Delete the rows whose id is not in ``keep_ids``; returns how many went."""
        collection = self._collection(index_name)
        keep = set(map(str, keep_ids))
        stale = [i for i in collection.get(include=[])["ids"] if i not in keep]
        if stale:
            collection.delete(ids=stale)
        return len(stale)

    def _query(self, q: StoreQuery) -> list[QueryResult]:
        p = q.options
        wheres = [w for w in (p.get("where"), to_chroma_where(q.filter) if q.filter else None) if w]
        where = wheres[0] if len(wheres) == 1 else ({"$and": wheres} if wheres else None)
        include = ["documents", "metadatas", "distances"] + (["embeddings"] if q.include_vector else [])
        collection = self._collection(q.index_name)
        try:
            found = collection.query(
                query_embeddings=[np.asarray(q.vector, dtype=np.float32)],
                n_results=int(q.top_k),
                where=where,
                where_document=p.get("where_document") or None,
                include=include,
            )
        except Exception as exc:
            raise StoreError(f"chroma: query on {q.index_name!r} failed: {exc}") from exc
        embeddings = found.get("embeddings")
        out = []
        for n, rid in enumerate(found["ids"][0]):
            vector = embeddings[0][n] if q.include_vector and embeddings is not None else None
            out.append(
                QueryResult(
                    id=rid,
                    score=1.0 - float(found["distances"][0][n]),  # cosine distance -> similarity
                    metadata=dict(found["metadatas"][0][n] or {}),
                    vector=[float(x) for x in vector] if vector is not None else None,
                    document=found["documents"][0][n],
                )
            )
        return out

    def text_query(
        self, index_name: str, query_text: str, top_k: int, *, filter: Mapping[str, Any] | None = None
    ) -> list[QueryResult]:
        raise StoreError("chroma: no ranked full-text search (use where_document to filter by content)")

    def index_rows(self, index_name: str) -> IndexRows:
        got = self._collection(index_name).get(include=["documents", "metadatas", "embeddings"])
        order = np.argsort(np.asarray(got["ids"], dtype=object)) if got["ids"] else np.zeros(0, int)
        vectors = np.asarray(got["embeddings"], dtype=np.float32) if len(got["ids"]) else np.zeros((0, 1))
        return IndexRows(
            ids=[got["ids"][i] for i in order],
            documents=[got["documents"][i] or "" for i in order],
            metadata=[dict(got["metadatas"][i] or {}) for i in order],
            vectors=vectors[order] if len(order) else vectors,
        )

    def index_fingerprint(self, index_name: str) -> str:
        rows = self.index_rows(index_name)
        h = hashlib.sha256()
        for rid, doc, meta in zip(rows.ids, rows.documents, rows.metadata, strict=True):
            h.update(f"{rid}\0{doc}\0{sorted(meta.items())}\0".encode())
        h.update(np.ascontiguousarray(rows.vectors, dtype=np.float32).tobytes())
        return f"{self.identity}/{index_name}#{h.hexdigest()}"
