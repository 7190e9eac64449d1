"""Vector query tools for agents (Mastra's RAG tools): a store's index behind a tool with store-specific
options, per-request overrides, tenant resolvers, rerankers and graceful degradation; the same over a
chunk graph; and an Amazon Bedrock knowledge-base adapter.

    from pipeline.vector_tool import create_vector_query_tool, LanceDBStore
    tool = create_vector_query_tool("text_units", embedder, store=LanceDBStore.at(root, "books"))
    tool.execute({"query_text": "who is Marley?", "top_k": 5}, {"top_k": 3})
"""

from pipeline.vector_tool.bedrock import BedrockKBTool, create_bedrock_kb_tool
from pipeline.vector_tool.filters import FilterError, parse_filter
from pipeline.vector_tool.graph import GraphRAGTool, create_graph_rag_tool
from pipeline.vector_tool.options import coerce_top_k, store_query_params
from pipeline.vector_tool.rerank import (
    EmbeddingRelevanceScorer,
    LLMRelevanceScorer,
    RRFHybridReranker,
    WeightedReranker,
)
from pipeline.vector_tool.resolver import StoreResolverError, resolve_store
from pipeline.vector_tool.stores import (
    ChromaStore,
    LanceDBStore,
    PgVectorStore,
    QueryResult,
    StoreError,
    VectorStore,
    sync_text_units,
)
from pipeline.vector_tool.tool import OVERRIDE_KEYS, VectorQueryTool, create_vector_query_tool

__all__ = [
    "OVERRIDE_KEYS",
    "BedrockKBTool",
    "ChromaStore",
    "EmbeddingRelevanceScorer",
    "FilterError",
    "GraphRAGTool",
    "LLMRelevanceScorer",
    "LanceDBStore",
    "PgVectorStore",
    "QueryResult",
    "RRFHybridReranker",
    "StoreError",
    "StoreResolverError",
    "VectorQueryTool",
    "VectorStore",
    "WeightedReranker",
    "coerce_top_k",
    "create_bedrock_kb_tool",
    "create_graph_rag_tool",
    "create_vector_query_tool",
    "parse_filter",
    "resolve_store",
    "store_query_params",
    "sync_text_units",
]
