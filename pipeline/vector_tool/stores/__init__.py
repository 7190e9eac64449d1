"""Vector stores behind one interface (``base.VectorStore``): LanceDB (default), pgvector, Chroma.

Each backend imports its client library only when used, so this package imports without them."""

from pipeline.vector_tool.stores.base import IndexRows, QueryResult, StoreError, VectorStore, is_vector_store
from pipeline.vector_tool.stores.chroma import ChromaStore
from pipeline.vector_tool.stores.lancedb import LanceDBStore
from pipeline.vector_tool.stores.pgvector import PgVectorStore
from pipeline.vector_tool.stores.sync import sync_text_units

__all__ = [
    "ChromaStore",
    "IndexRows",
    "LanceDBStore",
    "PgVectorStore",
    "QueryResult",
    "StoreError",
    "VectorStore",
    "is_vector_store",
    "sync_text_units",
]
