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
from dataclasses import dataclass
from typing import Any, ClassVar

from pipeline.llm.errors import LLMError
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


def check_query_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"query_text must be a non-empty string, got {value!r}")
    return value


@dataclass
class StoreRequest:
    """One request to a store-backed tool, validated and with its store resolved."""

    context: RequestContext
    index_name: str
    query_text: str
    top_k: int
    store: VectorStore
    filter: Any
    include_sources: bool
    overrides: dict[str, Any]


# eq=False: a tool is compared and hashed by identity, as before it was a dataclass.
@dataclass(eq=False, repr=False, kw_only=True)
class StoreTool(Tool):
    """A tool over a store's index. The options Mastra's vector and graph tools share are declared once
    here, and so is the request's way through: overrides, validation, the store, the filter, and a
    degraded answer (with the reason) instead of an exception. Subclasses search and shape the answer."""

    kind: ClassVar[str]  # names the tool in its default id
    failure_label: ClassVar[str]  # names it in the log when a request degrades
    default_description: ClassVar[str]
    context_item_schema: ClassVar[dict[str, Any]]

    index_name: str
    embedder: Any
    store: Any = None
    store_name: str | None = None
    stores: Mapping[str, VectorStore] | None = None
    include_sources: bool = True
    enable_filter: bool = False
    id: str | None = None  # None: named by kind, store and index in __post_init__
    description: str | None = None

    def __post_init__(self) -> None:
        self.index_name = check_index_name(self.index_name)
        self.stores = dict(self.stores or {})
        self.id = self.id or f"{self.kind} {self.store_name or 'DirectVectorStore'} {self.index_name} Tool"
        self.description = self.description or self.default_description
        self.input_schema = query_input_schema(self.enable_filter)
        self.output_schema = query_output_schema(self.context_item_schema)

    def _overrides(self, context: RequestContext) -> dict[str, Any]:
        """The subclass's own per-request settings, read before the request is validated."""
        return {}

    async def _search(self, request: StoreRequest) -> Any:
        """What the store holds for the request; an exception degrades the answer."""
        raise NotImplementedError

    async def _answer(self, request: StoreRequest, found: Any) -> dict[str, Any]:
        raise NotImplementedError

    async def aexecute(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        ctx: RequestContext = context or {}
        input = tool_input(input)
        log = logging.getLogger(type(self).__module__)  # a graph tool logs as pipeline.vector_tool.graph
        store_name = pick(ctx, "store_name", self.store_name)
        include_sources = bool(pick(ctx, "include_sources", self.include_sources))
        overrides = self._overrides(ctx)
        top_k = coerce_top_k(pick(ctx, "top_k", input.get("top_k")))
        try:
            index_name = check_index_name(pick(ctx, "index_name", self.index_name))
            query_text = check_query_text(input.get("query_text"))
            store = await resolve_store(self.store, ctx, store_name=store_name, registry=self.stores)
            if store is None:
                log.error("Vector store not found: %r (tool %s)", store_name, self.id)
                return degraded(f"vector store not found: {store_name!r}")
            query_filter = store_filter(store, ctx, input, self.enable_filter)
            request = StoreRequest(
                ctx, index_name, query_text, top_k, store, query_filter, include_sources, overrides
            )
            found = await self._search(request)
        except FilterError as exc:
            # The caller's filter, refused (a 422 at the service): one line, since a traceback at ERROR
            # per refused request buries the server's real failures.
            log.info("%s %s refused a filter: %s", self.failure_label, self.id, exc)
            return degraded(f"{type(exc).__name__}: {exc}")
        except LLMError as exc:  # the embedding server: its own one-line reason, no traceback
            log.warning("%s %s failed: %s", self.failure_label, self.id, exc)
            return degraded(f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            log.exception("%s %s failed", self.failure_label, self.id)
            return degraded(f"{type(exc).__name__}: {exc}")
        return await self._answer(request, found)


@dataclass(eq=False, repr=False, kw_only=True)
class VectorQueryTool(StoreTool):
    kind: ClassVar[str] = "VectorQuery"
    failure_label: ClassVar[str] = "vector query tool"
    default_description: ClassVar[str] = DEFAULT_DESCRIPTION
    context_item_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    include_vectors: bool = False
    reranker: Any = None
    database_config: Mapping[str, Any] | None = None
    embedders: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        self.embedders = dict(self.embedders or {})
        super().__post_init__()
        self.reranker = as_reranker(self.reranker, self.embedder)  # an object, or Mastra's {model, options}

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

    def _overrides(self, context: RequestContext) -> dict[str, Any]:
        return {
            "include_vectors": bool(pick(context, "include_vectors", self.include_vectors)),
            "reranker": pick(context, "reranker", self.reranker),
            "database_config": pick(context, "database_config", self.database_config),
        }

    async def _search(self, request: StoreRequest) -> tuple[list[QueryResult], Any]:
        embedder = self._embedder(request.context)
        reranker = as_reranker(request.overrides["reranker"], embedder)
        vector = (await asyncio.to_thread(embedder.embed, [request.query_text]))[0]
        store = request.store
        params = store_query_params(store.store_type, request.overrides["database_config"])
        results: list[QueryResult] = await asyncio.to_thread(
            lambda: store.query(
                request.index_name,
                vector,
                request.top_k,
                filter=request.filter,
                include_vector=request.overrides["include_vectors"],
                query_text=request.query_text,
                **params,
            )
        )
        return results, reranker

    async def _answer(self, request: StoreRequest, found: tuple[list[QueryResult], Any]) -> dict[str, Any]:
        results, reranker = found
        warnings: list[str] = []
        if reranker is not None and results:
            try:
                results = await reranker.rerank(
                    request.query_text,
                    results,
                    request.top_k,
                    store=request.store,
                    index_name=request.index_name,
                    filter=request.filter,
                )
            except Exception as exc:
                message = f"reranker failed ({type(exc).__name__}: {exc}); returning un-reranked results"
                log.warning("%s: %s", self.id, message)
                warnings.append(message)
        out: dict[str, Any] = {
            "relevant_context": [r.metadata for r in results],
            "sources": [r.source() for r in results] if request.include_sources else [],
        }
        if warnings:
            out["warnings"] = warnings
        return out


def create_vector_query_tool(index_name: str, embedder: Any, **options: Any) -> VectorQueryTool:
    """A vector query tool over ``index_name``; ``options`` are ``VectorQueryTool``'s (keywords only).

    ``store`` is a vector store (``pipeline.vector_tool.stores``) or a resolver ``(context) -> store``
    (sync or async) called per request; otherwise ``store_name`` is looked up in ``stores``.
    ``database_config`` is keyed by store type (``lancedb``, ``pgvector``, ``chroma``; others pass
    through flat). ``reranker`` is any object with ``async rerank(...)`` or Mastra's
    ``{model, options: {weights, topK}}`` (see ``rerank.py``). ``embedders`` names the models a request may
    pick with its context's ``model``. The others: ``include_vectors``, ``include_sources``,
    ``enable_filter``, ``id``, ``description``.
    """
    return VectorQueryTool(index_name=index_name, embedder=embedder, **options)
