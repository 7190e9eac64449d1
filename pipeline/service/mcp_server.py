"""The MCP server: global_search, local_search, drift_search, basic_search, chunk_graph_search and vector_query
as tools.

Two transports, same keys and namespaces as the HTTP API:
- stdio (`graphrag-mcp`, or `python -m pipeline.service mcp`): the key comes from the environment
  variable `GRAPHRAG_API_KEY` and is checked at start, so a bad key fails loudly, not per call;
- streamable HTTP: mounted at `/mcp` by `app.create_app`; every call carries its key in
  `Authorization: Bearer` or `X-API-Key`, like any other request.
A tool that is refused or fails returns an error result (`isError`) whose text is the HTTP API's JSON
error (`{"error": {"code": ..., "message": ...}}`), so agents can branch on the same codes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

from pipeline.service.auth import Principal
from pipeline.service.errors import InvalidRequest, ServiceError, Unauthorized
from pipeline.service.models import (
    BasicQuery,
    ChunkQuery,
    DriftQuery,
    GlobalQuery,
    LocalQuery,
    Namespace,
    Question,
    TimeoutS,
    VectorQuery,
)
from pipeline.service.queries import QueryService

KEY_ENV = "GRAPHRAG_API_KEY"
INSTRUCTIONS = (
    "GraphRAG retrieval over one namespace (tenant index) per call. global_search answers corpus-wide "
    "questions from community summaries; local_search answers questions about specific entities with "
    "cited evidence; drift_search starts from the nearest community reports and follows up with local "
    "searches (broader than local, cheaper than global); basic_search answers from the nearest passages; "
    "chunk_graph_search and vector_query return matching text chunks."
)


def build_mcp_server(service: QueryService, *, stdio_key: str | None = None) -> MCPServer:
    """The tools over `service`. `stdio_key` is the key for a stdio session (HTTP calls bring their own)."""
    server = MCPServer("graphrag", instructions=INSTRUCTIONS)

    def principal(ctx: Context) -> Principal:
        headers = ctx.headers
        if headers is not None:  # streamable HTTP: this request's own key
            return service.authenticate(headers)
        return service.keys.authenticate(stdio_key)

    async def call(ctx: Context, kind: type, **fields: Any) -> Any:
        """The service's answer, or an error result whose text is the HTTP API's JSON error body."""
        try:
            request = kind(**{k: v for k, v in fields.items() if v is not None})
            return await service.run(principal(ctx), request)
        except ValidationError as exc:
            error: ServiceError = InvalidRequest(
                "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            )
        except ServiceError as exc:
            error = exc
        text = json.dumps(error.body(), default=str)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    @server.tool()
    async def global_search(
        namespace: Namespace,
        question: Question,
        ctx: Context,
        level: int | None = None,
        timeout_s: TimeoutS = None,
    ) -> dict[str, Any]:
        """Answer a corpus-wide question ("what are the main themes?") by map-reduce over community reports.

        `level`: community level (default: leaf communities)."""
        return await call(
            ctx, GlobalQuery, namespace=namespace, question=question, level=level, timeout_s=timeout_s
        )

    @server.tool()
    async def local_search(
        namespace: Namespace,
        question: Question,
        ctx: Context,
        top_k: int = 8,
        community_level: int | None = None,
        timeout_s: TimeoutS = None,
    ) -> dict[str, Any]:
        """Answer a question about specific entities ("how is X related to Y?") with evidence cited to
        document offsets. `top_k`: communities to keep (1-50)."""
        return await call(
            ctx,
            LocalQuery,
            namespace=namespace,
            question=question,
            top_k=top_k,
            community_level=community_level,
            timeout_s=timeout_s,
        )

    @server.tool()
    async def drift_search(
        namespace: Namespace,
        question: Question,
        ctx: Context,
        primer_k: int | None = None,
        primer_folds: int | None = None,
        depth: int | None = None,
        breadth: int | None = None,
        community_level: int | None = None,
        timeout_s: TimeoutS = None,
    ) -> dict[str, Any]:
        """Answer a question that needs both breadth and detail: a primer over the community reports
        nearest to it, `depth` rounds of `breadth` follow-up local searches, and a reduce. The result's
        `nodes` are the search tree (question, answer, score, citations, children)."""
        return await call(
            ctx,
            DriftQuery,
            namespace=namespace,
            question=question,
            primer_k=primer_k,
            primer_folds=primer_folds,
            depth=depth,
            breadth=breadth,
            community_level=community_level,
            timeout_s=timeout_s,
        )

    @server.tool()
    async def basic_search(
        namespace: Namespace,
        question: Question,
        ctx: Context,
        top_k: int = 10,
        timeout_s: TimeoutS = None,
    ) -> dict[str, Any]:
        """Answer from the passages nearest the question (vector RAG), cited to their document offsets."""
        return await call(
            ctx, BasicQuery, namespace=namespace, question=question, top_k=top_k, timeout_s=timeout_s
        )

    @server.tool()
    async def chunk_graph_search(
        namespace: Namespace,
        query: Question,
        ctx: Context,
        top_k: int = 10,
        random_walk_steps: int = 100,
        restart_prob: float = 0.15,
        filter: dict[str, str | int | float | bool | None] | None = None,
        timeout_s: TimeoutS = None,
    ) -> dict[str, Any]:
        """Text chunks ranked by a random walk with restart over the chunk-similarity graph, seeded by the
        chunks nearest the query. `filter`: metadata equality, e.g. {"document_title": "a.txt"}."""
        return await call(
            ctx,
            ChunkQuery,
            namespace=namespace,
            query=query,
            top_k=top_k,
            random_walk_steps=random_walk_steps,
            restart_prob=restart_prob,
            filter=filter,
            timeout_s=timeout_s,
        )

    @server.tool()
    async def vector_query(
        namespace: Namespace,
        query: Question,
        ctx: Context,
        top_k: int = 10,
        filter: dict[str, Any] | None = None,
        timeout_s: TimeoutS = None,
    ) -> dict[str, Any]:
        """Text chunks nearest the query by cosine similarity. `filter`: metadata, e.g.
        {"document_title": "carol.txt"} or {"n_tokens": {"$gte": 100}} ($eq $ne $gt $gte $lt $lte $in $nin,
        $and / $or)."""
        return await call(
            ctx,
            VectorQuery,
            namespace=namespace,
            query=query,
            top_k=top_k,
            filter=filter,
            timeout_s=timeout_s,
        )

    return server


def main(argv: list[str] | None = None) -> int:
    """stdio MCP server; stdout carries the protocol, so logs go to stderr."""
    from pipeline.settings import load_settings

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    service = QueryService(load_settings())
    key = os.environ.get(KEY_ENV)
    try:
        service.keys.authenticate(key)
    except Unauthorized:
        print(
            f"error: set {KEY_ENV} to an API key listed (as its sha256) in PIPELINE_API_KEYS_FILE",
            file=sys.stderr,
        )
        return 2
    build_mcp_server(service, stdio_key=key).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
