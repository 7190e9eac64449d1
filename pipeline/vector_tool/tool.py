"""``create_vector_query_tool``: a store's index as a tool an agent can call (Mastra's
createVectorQueryTool), callable from Python and exportable as an OpenAI function-calling tool.

Input ``{query_text, top_k, filter?}`` (Mastra's ``queryText`` / ``topK`` are accepted too); output
``{relevant_context, sources}`` (plus ``error`` when the request degraded, ``warnings`` when a reranker
failed). For agents, ``aexecute_agent`` / ``execute_agent`` answer with Mastra's names
(``relevantContext``) and ``openai_tool(mastra_names=True)`` asks for ``queryText`` / ``topK``. A request
context (any mapping) overrides the tool's settings per request: a key with a value replaces the whole
value (``database_config`` is not deep-merged); a key whose value is None falls through to the tool's
setting, as Mastra's ``context.get(key) ?? option``.

Where we differ from Mastra on purpose: a reranker failure returns the un-reranked results with a
warning (Mastra returns nothing); a degraded result says why in ``error``; a store receives only its
own ``database_config`` entry; an invalid filter is reported as such.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import Any

from pipeline.vector_tool.filters import FilterError, parse_filter
from pipeline.vector_tool.options import DEFAULT_TOP_K, coerce_top_k, store_query_params
from pipeline.vector_tool.rerank import as_reranker
from pipeline.vector_tool.resolver import RequestContext, resolve_store
from pipeline.vector_tool.stores.base import QueryResult, VectorStore

log = logging.getLogger(__name__)

DEFAULT_DESCRIPTION = "Access the knowledge base to find information needed to answer user questions."
OVERRIDE_KEYS = (
    "index_name",
    "store_name",
    "include_vectors",
    "include_sources",
    "reranker",
    "database_config",
    "top_k",
    "filter",
    "model",
)
_TOP_K_DOC = (
    f"Number of results to return (default {DEFAULT_TOP_K}). Use more for broad questions, fewer for "
    "specific ones."
)
_FILTER_DOC = (
    'A JSON object, as a string, restricting results by metadata, e.g. {"document_title": "carol.txt"} or '
    '{"n_tokens": {"$gte": 100}}. Operators: $eq $ne $gt $gte $lt $lte $in $nin, $and / $or lists. '
    'Use "{}" for no filter.'
)


class Tool:
    """What every tool here shares: an id, a description, JSON schemas and sync/async execution."""

    id: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    async def aexecute(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def execute(self, input: Mapping[str, Any], context: RequestContext | None = None) -> dict[str, Any]:
        """Run the tool from synchronous code (use ``aexecute`` inside an event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.aexecute(input, context))
        raise RuntimeError(f"{self.id}: execute() called inside an event loop; await aexecute() instead")

    __call__ = execute

    async def aexecute_agent(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        """``aexecute`` with Mastra's output names (``relevantContext``), for an agent's tool call."""
        return mastra_output(await self.aexecute(input, context))

    def execute_agent(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        return mastra_output(self.execute(input, context))

    def _init_store_tool(
        self,
        *,
        kind: str,
        index_name: str,
        embedder: Any,
        store: Any,
        store_name: str | None,
        stores: Mapping[str, VectorStore] | None,
        include_sources: bool,
        enable_filter: bool,
        id: str | None,
        description: str | None,
        default_description: str,
        context_item_schema: dict[str, Any],
    ) -> None:
        """The fields every store-backed tool shares (Mastra's vector and graph tools take the same ones)."""
        self.index_name = check_index_name(index_name)
        self.embedder = embedder
        self.store = store
        self.store_name = store_name
        self.stores = dict(stores or {})
        self.include_sources = include_sources
        self.enable_filter = enable_filter
        self.id = id or f"{kind} {store_name or 'DirectVectorStore'} {index_name} Tool"
        self.description = description or default_description
        self.input_schema = query_input_schema(enable_filter)
        self.output_schema = query_output_schema(context_item_schema)

    def openai_tool(self, mastra_names: bool = False) -> dict[str, Any]:
        """The OpenAI function-calling definition (``tools=[tool.openai_tool()]``); with ``mastra_names``
        its parameters are Mastra's ``queryText`` / ``topK`` (answer the call with ``execute_agent``)."""
        parameters = self.input_schema
        if mastra_names:
            renamed = {MASTRA_NAMES.get(k, k): v for k, v in parameters["properties"].items()}
            required = [MASTRA_NAMES.get(k, k) for k in parameters["required"]]
            parameters = {**parameters, "properties": renamed, "required": required}
        return {
            "type": "function",
            "function": {
                "name": re.sub(r"[^A-Za-z0-9_-]", "_", self.id)[:64],
                "description": self.description,
                "parameters": parameters,
            },
        }


def source_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "metadata": {"type": "object"},
            "vector": {"type": "array", "items": {"type": "number"}},
            "score": {"type": "number"},
            "document": {"type": "string"},
        },
        "required": ["id", "metadata", "vector", "score", "document"],
    }


def query_input_schema(enable_filter: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "query_text": {"type": "string", "description": "The text to search the knowledge base for."},
        "top_k": {"type": ["number", "string"], "description": _TOP_K_DOC},
    }
    required = ["query_text", "top_k"]
    if enable_filter:
        properties["filter"] = {"type": "string", "description": _FILTER_DOC}
        required.append("filter")
    return {"type": "object", "properties": properties, "required": required}


def query_output_schema(context_items: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "relevant_context": {"type": "array", "items": context_items},
            "sources": {"type": "array", "items": source_schema()},
            "error": {"type": "string"},
            "warnings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["relevant_context", "sources"],
    }


# snake_case (ours, for Python callers) -> Mastra's camelCase, on input and output
MASTRA_NAMES = {"query_text": "queryText", "top_k": "topK", "relevant_context": "relevantContext"}


def tool_input(input: Mapping[str, Any]) -> dict[str, Any]:
    """The input with Mastra's names read as ours (``queryText`` -> ``query_text``) where ours are absent."""
    out = dict(input)
    for ours, theirs in MASTRA_NAMES.items():
        if out.get(ours) is None and theirs in out:
            out[ours] = out[theirs]
    return out


def mastra_output(out: Mapping[str, Any]) -> dict[str, Any]:
    return {MASTRA_NAMES.get(k, k): v for k, v in out.items()}


def degraded(message: str) -> dict[str, Any]:
    return {"relevant_context": [], "sources": [], "error": message}


def pick(context: RequestContext, key: str, default: Any) -> Any:
    """The request context's value (it replaces, never merges), else ``default``: None falls through, as
    Mastra's ``context.get(key) ?? option``."""
    value = context.get(key)
    return default if value is None else value


def request_filter(context: RequestContext, input: Mapping[str, Any], enable_filter: bool) -> Any:
    """A context filter wins and enables filtering (Mastra: forced filters per tenant); else the input's."""
    if context.get("filter") is not None:
        return parse_filter(context["filter"])
    return parse_filter(input.get("filter")) if enable_filter else None


def store_filter(store: Any, context: RequestContext, input: Mapping[str, Any], enable_filter: bool) -> Any:
    """``request_filter``, with an invalid one reported for the store it was meant for."""
    try:
        return request_filter(context, input, enable_filter)
    except FilterError as exc:
        kind = getattr(store, "store_type", type(store).__name__)
        raise FilterError(f"{exc} (filter refused for the {kind!r} store)") from None


def check_index_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"index_name is required, got: {value!r}")
    return value


class VectorQueryTool(Tool):
    def __init__(
        self,
        *,
        index_name: str,
        embedder: Any,
        store: Any = None,
        store_name: str | None = None,
        stores: Mapping[str, VectorStore] | None = None,
        include_vectors: bool = False,
        include_sources: bool = True,
        enable_filter: bool = False,
        reranker: Any = None,
        database_config: Mapping[str, Any] | None = None,
        id: str | None = None,
        description: str | None = None,
        embedders: Mapping[str, Any] | None = None,
    ) -> None:
        self.embedders = dict(embedders or {})
        self._init_store_tool(
            kind="VectorQuery",
            index_name=index_name,
            embedder=embedder,
            store=store,
            store_name=store_name,
            stores=stores,
            include_sources=include_sources,
            enable_filter=enable_filter,
            id=id,
            description=description,
            default_description=DEFAULT_DESCRIPTION,
            context_item_schema={"type": "object"},
        )
        self.include_vectors = include_vectors
        self.reranker = as_reranker(reranker, embedder)  # an object, or Mastra's {model, options}
        self.database_config = database_config

    def __repr__(self) -> str:
        return f"VectorQueryTool(id={self.id!r})"

    def _embedder(self, context: RequestContext) -> Any:
        """The request's ``model`` (a name among the tool's ``embedders``), else the tool's embedder. The
        index's vectors were made by one model: a request may pick another only where one is configured
        for it (a store indexed twice, say). Provider options cannot change a local model's vectors."""
        if context.get("providerOptions") or context.get("provider_options"):
            raise ValueError("providerOptions are not supported: configure one embedder per option set")
        name = context.get("model")
        if name is None:
            return self.embedder
        if name not in self.embedders:
            raise ValueError(f"model {name!r} is not one of this tool's embedders {sorted(self.embedders)}")
        return self.embedders[name]

    async def aexecute(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        ctx: RequestContext = context or {}
        input = tool_input(input)
        index_name = pick(ctx, "index_name", self.index_name)
        store_name = pick(ctx, "store_name", self.store_name)
        include_vectors = bool(pick(ctx, "include_vectors", self.include_vectors))
        include_sources = bool(pick(ctx, "include_sources", self.include_sources))
        reranker = pick(ctx, "reranker", self.reranker)
        database_config = pick(ctx, "database_config", self.database_config)
        top_k = coerce_top_k(pick(ctx, "top_k", input.get("top_k")))
        query_text = input.get("query_text")
        try:
            index_name = check_index_name(index_name)
            if not isinstance(query_text, str) or not query_text.strip():
                raise ValueError(f"query_text must be a non-empty string, got {query_text!r}")
            store = await resolve_store(self.store, ctx, store_name=store_name, registry=self.stores)
            if store is None:
                log.error("Vector store not found: %r (tool %s)", store_name, self.id)
                return degraded(f"vector store not found: {store_name!r}")
            query_filter = store_filter(store, ctx, input, self.enable_filter)
            embedder = self._embedder(ctx)
            reranker = as_reranker(reranker, embedder)
            vector = (await asyncio.to_thread(embedder.embed, [query_text]))[0]
            params = store_query_params(store.store_type, database_config)
            results: list[QueryResult] = await asyncio.to_thread(
                lambda: store.query(
                    index_name,
                    vector,
                    top_k,
                    filter=query_filter,
                    include_vector=include_vectors,
                    query_text=query_text,
                    **params,
                )
            )
        except Exception as exc:
            log.exception("vector query tool %s failed", self.id)
            return degraded(f"{type(exc).__name__}: {exc}")
        warnings: list[str] = []
        if reranker is not None and results:
            try:
                results = await reranker.rerank(
                    query_text, results, top_k, store=store, index_name=index_name, filter=query_filter
                )
            except Exception as exc:
                message = f"reranker failed ({type(exc).__name__}: {exc}); returning un-reranked results"
                log.warning("%s: %s", self.id, message)
                warnings.append(message)
        out: dict[str, Any] = {
            "relevant_context": [r.metadata for r in results],
            "sources": [r.source() for r in results] if include_sources else [],
        }
        if warnings:
            out["warnings"] = warnings
        return out


def create_vector_query_tool(
    index_name: str,
    embedder: Any,
    *,
    store: Any = None,
    store_name: str | None = None,
    stores: Mapping[str, VectorStore] | None = None,
    include_vectors: bool = False,
    include_sources: bool = True,
    enable_filter: bool = False,
    reranker: Any = None,
    database_config: Mapping[str, Any] | None = None,
    id: str | None = None,
    description: str | None = None,
    embedders: Mapping[str, Any] | None = None,
) -> VectorQueryTool:
    """A vector query tool over ``index_name``.

    ``store`` is a vector store (``pipeline.vector_tool.stores``) or a resolver ``(context) -> store``
    (sync or async) called per request; otherwise ``store_name`` is looked up in ``stores``.
    ``database_config`` is keyed by store type (``lancedb``, ``pgvector``, ``chroma``; others pass
    through flat). ``reranker`` is any object with ``async rerank(...)`` or Mastra's
    ``{model, options: {weights, topK}}`` (see ``rerank.py``). ``embedders`` names the models a request may
    pick with its context's ``model``.
    """
    return VectorQueryTool(
        index_name=index_name,
        embedder=embedder,
        store=store,
        store_name=store_name,
        stores=stores,
        include_vectors=include_vectors,
        include_sources=include_sources,
        enable_filter=enable_filter,
        reranker=reranker,
        database_config=database_config,
        id=id,
        description=description,
        embedders=embedders,
    )
