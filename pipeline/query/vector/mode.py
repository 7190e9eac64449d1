"""The vector query as every door sees it (`pipeline.query.common.mode`): the nearest text units by
cosine through the vector query tool (`pipeline.vector_tool`), on the namespace's LanceDB table or a
copy of it in another store; no model call.

The tool degrades a failure to an empty result with a reason; here a missing table is
`TableNotFoundError` (index_not_ready), a bad filter `VectorFilterError`, a damaged table its
`IndexDamaged`, and anything else a `degraded` result whose public reason names no server path.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pipeline.core import schema
from pipeline.io.repair import diagnose
from pipeline.io.store import TableNotFoundError
from pipeline.llm.errors import EmbeddingUnavailableError
from pipeline.query.common.mode import Mode
from pipeline.query.common.retrieval import Hits, checkpoint
from pipeline.query.common.scope import QueryScope
from pipeline.query.requests import VectorOptions
from pipeline.query.vector.terminal import TERMINAL

log = logging.getLogger(__name__)
DEGRADED = "the vector search failed; the server log has the details"


class VectorFilterError(ValueError):
    """A metadata filter the tool cannot take; `detail` names the field."""

    detail = {"field": "filter"}


@dataclass(frozen=True)
class VectorSearchConfig:
    top_k: int | None = None  # None: the tool's default
    filter: dict[str, Any] | None = None
    store: str = "lancedb"  # lancedb | pgvector | chroma (the CLI's --store; a copy synced from LanceDB)
    settings: Any = None  # where pgvector and chroma are configured


async def vector_search(scope: QueryScope, query: str, config: VectorSearchConfig) -> Hits:
    from pipeline.vector_tool import FilterError, LanceDBStore, create_vector_query_tool, parse_filter
    from pipeline.vector_tool.namespace_stores import namespace_store
    from pipeline.vector_tool.options import DEFAULT_TOP_K

    # Every store's rows come from this table; has_lance_table opens no LanceDB folder that is not
    # there, so the check creates nothing.
    if not scope.store.has_lance_table(schema.LANCE_TEXT_UNITS):
        raise TableNotFoundError(
            f"namespace {scope.store.namespace!r} has no LanceDB table {schema.LANCE_TEXT_UNITS!r} yet; "
            "materialize the embedding asset first"
        )
    try:
        query_filter = parse_filter(config.filter)
    except FilterError as exc:
        raise VectorFilterError(str(exc)) from None
    # Steps, each after a checkpoint: the query's embedding (the tool's own is then a cache hit), then
    # the search.
    if stop := checkpoint(scope, "embedding the query"):
        return stop
    scope.embedder.embed([query])
    if stop := checkpoint(scope, "the vector search"):
        return stop
    if config.store == "lancedb":
        store: Any = LanceDBStore(scope.store)
    else:
        store = namespace_store(config.settings, scope.store.namespace, config.store)  # type: ignore[arg-type]
    tool = create_vector_query_tool(schema.LANCE_TEXT_UNITS, scope.embedder, store=store, enable_filter=True)
    top_k = config.top_k or DEFAULT_TOP_K
    out = await tool.aexecute({"query_text": query, "top_k": top_k, "filter": query_filter or {}})
    if out.get("error"):
        kind, _, reason = str(out["error"]).partition(": ")
        if kind == "FilterError":  # ours, naming the field and what it takes
            raise VectorFilterError(reason)
        if kind == TableNotFoundError.__name__:
            raise TableNotFoundError(reason)
        if kind == EmbeddingUnavailableError.__name__:  # no question can be embedded: not a degraded answer
            raise EmbeddingUnavailableError(reason, task="embed")
        found = diagnose(scope.store)
        if found is not None:  # the tool turned a damaged table's read error into its reason
            raise found
        # The tool's reason is the store's own message (paths on the server, a table's schema): logged,
        # not answered.
        log.warning("vector query on %s degraded: %s", scope.store.namespace, out["error"])
        return Hits(query, "degraded", reason=DEGRADED, cause=reason or kind)
    sources = out["sources"]
    hits = [{"id": s["id"], "score": s["score"], **s["metadata"], "text": s["document"]} for s in sources]
    return Hits(query, "completed" if hits else "no_results", hits, sources=sources)


MODE = Mode(
    name="vector",
    summary="vector search over the namespace's text units",
    options=VectorOptions,
    configure=lambda settings, given: VectorSearchConfig(**given, settings=settings),
    search=vector_search,
    needs=(("lancedb", schema.LANCE_TEXT_UNITS),),
    tool="vector_query",
    question="query",
    errors=(VectorFilterError,),
    lane="quick",
    uses_model=False,
    http_doc="Nearest text units by cosine similarity (`pipeline.vector_tool`'s vector query tool).",
    tool_doc="Text chunks nearest the query by cosine similarity. `filter`: metadata, e.g. "
    '{"document_title": "carol.txt"} or {"n_tokens": {"$gte": 100}} ($eq $ne $gt $gte $lt $lte $in '
    "$nin, $and / $or).",
    hint="returns the text chunks nearest the query",
    terminal=TERMINAL,
)
