"""How the service runs each kind of query on its worker thread: one function per mode, from the
request body to the library's result as a dict (`QueryService` admits, times and bounds it).

The graph modes get a fresh engine per query (its usage counters and connections are that query's);
the retrieval-only modes stop between their steps once the query is cancelled (`checkpoint`), so a
query past its deadline frees its key's slot one step later instead of finishing its search.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.core import schema
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.repair import diagnose
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.llm.batch import stopped
from pipeline.query import registry
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.basic.search import BasicSearchConfig, basic_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.drift.search import DriftSearchConfig, drift_search_async
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async
from pipeline.query.lazy.search import LazySearchConfig, lazy_search_async
from pipeline.query.local.search import LocalSearchConfig, local_search_async
from pipeline.service.errors import InvalidRequest
from pipeline.service.models import ChunkQuery, VectorQuery
from pipeline.settings import Settings

log = logging.getLogger("pipeline.service")


class Abandoned(Exception):
    """The deadline passed or the client left between two steps of a query without LLM calls."""


def checkpoint(cancel: threading.Event, deadline: float, before: str) -> None:
    """Stop between steps once the query is cancelled: its slot is free one step after the deadline."""
    if stopped(cancel, deadline):
        raise Abandoned(f"deadline passed before {before}")


@dataclass(frozen=True)
class Work:
    """One admitted query's store, settings, engine factory, embedder, deadline and cancel signal."""

    store: NamespaceStore
    settings: Settings
    new_engine: Callable[[], Engine]
    embedder: Embedder
    deadline: float
    cancel: threading.Event

    def scope(self, engine: Engine) -> QueryScope:
        """What a mode is handed: this query's store, embedder and clocks, with `engine`."""
        return registry.scope(self.store, engine, self.embedder, self.deadline, self.cancel)


def _graph_mode(config_of: Any, search: Callable[..., Any]) -> Callable[[Work, Any], dict[str, Any]]:
    """A mode that runs `search(scope, question, config)`."""

    def run(work: Work, req: Any) -> dict[str, Any]:
        engine = work.new_engine()
        config = config_of.from_settings(work.settings, **req.given())
        return engine.run_sync(search(work.scope(engine), req.question, config)).to_dict()

    return run


def run_chunks(work: Work, req: ChunkQuery) -> dict[str, Any]:
    from pipeline.chunk_graph.indexing import load_namespace_chunk_graph

    checkpoint(work.cancel, work.deadline, "loading the chunk graph")
    graph = load_namespace_chunk_graph(work.store, dimension=work.embedder.dimension)
    checkpoint(work.cancel, work.deadline, "embedding the query")
    vector = work.embedder.embed([req.query])[0]
    checkpoint(work.cancel, work.deadline, "the walk")
    options = req.given()
    options["filter"] = options.get("filter") or None
    rows = [h.to_dict() for h in graph.query(vector, **options)]
    return {"query": req.query, "status": "completed" if rows else "no_results", "hits": rows}


def run_vector(work: Work, req: VectorQuery) -> dict[str, Any]:
    """Through the vector query tool (`pipeline.vector_tool`), with this namespace's LanceDB store."""
    from pipeline.vector_tool import FilterError, LanceDBStore, create_vector_query_tool, parse_filter
    from pipeline.vector_tool.options import DEFAULT_TOP_K

    # The tool degrades a missing table to an empty result; a service says index_not_ready instead
    # (has_lance_table opens no LanceDB folder that is not there, so the check creates nothing).
    if not work.store.has_lance_table(schema.LANCE_TEXT_UNITS):
        raise TableNotFoundError(f"LanceDB table '{schema.LANCE_TEXT_UNITS}' missing")
    try:
        query_filter = parse_filter(req.filter)
    except FilterError as exc:
        raise InvalidRequest(str(exc), detail={"field": "filter"}) from None
    # Steps, each followed by a checkpoint: the query's embedding (the tool's own is then a cache
    # hit), then the search.
    checkpoint(work.cancel, work.deadline, "embedding the query")
    work.embedder.embed([req.query])
    checkpoint(work.cancel, work.deadline, "the vector search")
    tool = create_vector_query_tool(
        schema.LANCE_TEXT_UNITS, work.embedder, store=LanceDBStore(work.store), enable_filter=True
    )
    top_k = req.top_k or DEFAULT_TOP_K
    out = tool.execute({"query_text": req.query, "top_k": top_k, "filter": query_filter or {}})
    if out.get("error"):
        reason = str(out["error"])
        if reason.startswith("FilterError: "):  # ours, naming the field and what it takes
            raise InvalidRequest(reason.removeprefix("FilterError: "), detail={"field": "filter"})
        found = diagnose(work.store)
        if found is not None:  # the tool turned a damaged table's read error into its reason
            raise found
        # The tool's reason is the store's own message (paths on the server, a table's schema): logged,
        # not answered.
        log.warning("vector query on %s degraded: %s", work.store.namespace, reason)
        reason = "the vector search failed; the server log has the details"
        return {"query": req.query, "status": "degraded", "reason": reason, "hits": []}
    hits = [
        {"id": s["id"], "score": s["score"], **s["metadata"], "text": s["document"]} for s in out["sources"]
    ]
    return {"query": req.query, "status": "completed" if hits else "no_results", "hits": hits}


MODES: dict[str, Callable[[Work, Any], dict[str, Any]]] = {
    "global": _graph_mode(GlobalSearchConfig, global_search_async),
    "local": _graph_mode(LocalSearchConfig, local_search_async),
    "drift": _graph_mode(DriftSearchConfig, drift_search_async),
    "basic": _graph_mode(BasicSearchConfig, basic_search_async),
    "lazy": _graph_mode(LazySearchConfig, lazy_search_async),
    "auto": _graph_mode(AutoSearchConfig, auto_search_async),
    "chunks": run_chunks,
    "vector": run_vector,
}
