"""The MCP server: one tool per registered query mode (`pipeline.query.registry`): global_search,
local_search, drift_search, basic_search, lazy_search, auto_search, chunk_graph_search and vector_query;
and `list_documents`, read-only: a namespace's documents and their status (`GET .../documents`).

Two transports, same keys and namespaces as the HTTP API:
- stdio (`graphrag-mcp`, or `python -m pipeline.service mcp`): the key comes from the environment
  variable `GRAPHRAG_API_KEY` and is checked at start, so a bad key fails loudly, not per call;
- streamable HTTP: mounted at `/mcp` by `app.create_app`; every call carries its key in
  `Authorization: Bearer` or `X-API-Key`, like any other request.
A tool that is refused or fails returns an error result (`isError`) whose text is the HTTP API's JSON
error (`{"error": {"code": ..., "message": ...}}`), so agents can branch on the same codes.
A call that asks for progress (a progress token) hears the query's events as progress notifications
while it runs: the route, the sources read, the answer's text as it is written, the citations.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.common import events as ev
from pipeline.query.common.mode import Mode
from pipeline.service.auth import KeysUnavailable, Principal
from pipeline.service.errors import ServiceError, Unauthorized, invalid_request
from pipeline.service.models import Namespace, body_of
from pipeline.service.queries import ANSWER_KEYS, QueryService

KEY_ENV = "GRAPHRAG_API_KEY"
NOT_TOOL_FIELDS = frozenset({"stream"})
PREAMBLE = "GraphRAG retrieval over one namespace (tenant index) per call. "
LIST_DOCUMENTS = (
    "List a namespace's documents in its committed index: id, name, type, size, pages, content hash and "
    "status (indexed, or failed with the reason the ingest named). Read-only."
)


def instructions(modes: list[Mode]) -> str:
    """What the server tells an agent: each tool's clause from its mode's record."""
    return PREAMBLE + "; ".join(f"{m.tool_name} {m.hint or m.summary}" for m in modes) + "."


def _tool(name: str, doc: str, body: type[BaseModel], call: Callable[..., Awaitable[Any]]) -> Any:
    """A tool function whose parameters are `body`'s fields (types, bounds, descriptions, defaults), so
    the MCP schema is the HTTP body's; the body model validates the call."""
    required = [n for n, f in body.model_fields.items() if f.is_required()]
    # `stream` is HTTP's: a tool reports progress through its context whatever it is asked
    optional = [n for n in body.model_fields if n not in required and n not in NOT_TOOL_FIELDS]
    params = []
    for n in (*required, *optional):
        f = body.model_fields[n]
        annotation = Annotated[(f.annotation, *f.metadata, Field(description=f.description))]
        default = inspect.Parameter.empty if n in required else None
        params.append(
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    async def tool(ctx: Context, **fields: Any) -> dict[str, Any]:
        return await call(ctx, body, **fields)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = doc
    tool.__signature__ = inspect.Signature(params, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": dict[str, Any]}
    return tool


def error_result(body: dict[str, Any]) -> CallToolResult:
    """An HTTP API JSON error body (`ServiceError.body`) as an MCP error result."""
    text = json.dumps(body, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class _Server(MCPServer):
    """Validates each call's raw arguments with its mode's HTTP body model before the SDK does: the SDK's
    argument model ignores unknown arguments (`"Namespace"` beside `"namespace"` went unnoticed) and
    answers a bad one in plain text; here both are the HTTP API's 422 `invalid_request` JSON."""

    def __init__(self, bodies: dict[str, type[BaseModel]], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bodies = bodies

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        body = self._bodies.get(name)
        if body is not None:
            try:
                body.model_validate(arguments)
            except ValidationError as exc:
                return error_result(invalid_request(exc.errors()).body())
        return await super().call_tool(name, arguments, context)


async def answer_with_progress(
    service: QueryService, principal: Principal, request: Any, ctx: Context
) -> Any:
    """`service.run`'s answer, the query's events (`pipeline.query.common.events`) sent on the way as
    progress notifications when the caller asked for them (a progress token): one step per event, its
    message the answer's text as it is written, or what the event says (route, sources, citation)."""
    async with aclosing(service.stream(principal, request)) as events:  # a cancelled call stops the query
        step = 0
        async for kind, data in events:
            if kind == ev.DONE:  # the HTTP API's JSON answer, less what only a stream's `done` has
                return {k: data[k] for k in ANSWER_KEYS}
            if kind == ev.ERROR:
                error = {k: data[k] for k in ("code", "message", "detail") if data.get(k) is not None}
                return error_result({"error": error})
            step += 1
            await ctx.report_progress(step, message=progress_message(kind, data))
    raise ServiceError("the query's events ended without an answer")  # every stream ends with done or error


def progress_message(kind: str, data: dict[str, Any]) -> str:
    if kind == ev.DELTA:
        return data["text"]
    if kind == ev.ROUTE:
        return f"route: {data['route']}" + (f" ({data['reason']})" if data.get("reason") else "")
    if kind == ev.CONTEXT:
        return f"context: {len(data['sources'])} sources"
    if kind == ev.CITATION:
        name = data.get("document_title") or data.get("title") or data.get("id")
        return f"citation [{data['marker']}]: {data.get('section')} {name}"
    return kind


def build_mcp_server(service: QueryService, *, stdio_key: str | None = None) -> MCPServer:
    """The tools over `service`. `stdio_key` is the key for a stdio session (HTTP calls bring their own)."""
    modes = list(registry.MODES.values())  # as registered when the server is built
    bodies: dict[str, type[BaseModel]] = {m.tool_name: body_of(m) for m in modes}
    server = _Server(bodies, "graphrag", instructions=instructions(modes))

    def principal(ctx: Context) -> Principal:
        headers = ctx.headers
        if headers is not None:  # streamable HTTP: this request's own key
            return service.authenticate(headers)
        return service.keys.authenticate(stdio_key)

    async def call(ctx: Context, kind: type, **fields: Any) -> Any:
        """The service's answer, or an error result whose text is the HTTP API's JSON error body."""
        try:
            request = kind(**{k: v for k, v in fields.items() if v is not None})
            return await answer_with_progress(service, principal(ctx), request, ctx)
        except ValidationError as exc:
            error: ServiceError = invalid_request(exc.errors())
        except ServiceError as exc:
            error = exc
        return error_result(error.body())

    for mode in modes:
        name, doc = mode.tool_name, mode.doc("tool")
        server.add_tool(_tool(name, doc, bodies[name], call), name=name, description=doc)

    async def list_documents(
        namespace: Namespace,
        ctx: Context,
    ) -> dict[str, Any]:
        try:
            caller = principal(ctx)
            store = NamespaceStore.from_settings(service.settings, caller.authorize(namespace))
            return await asyncio.to_thread(service.uploads.documents, caller, store)
        except ServiceError as exc:
            return error_result(exc.body())

    server.add_tool(list_documents, name="list_documents", description=LIST_DOCUMENTS)
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
    except KeysUnavailable as exc:
        print(f"error: {exc.message} (PIPELINE_API_KEYS_FILE)", file=sys.stderr)
        return 2
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
